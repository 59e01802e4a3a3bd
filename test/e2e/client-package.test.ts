/**
 * The published client as a newcomer gets it: `npm pack` of packages/client, installed from the
 * tarball into a scratch project outside the repository (its `ws` dependency resolved by npm from
 * the local cache, else the registry), then the examples of the package's README run from there
 * against a live gateway with the fake provider: the Node one with `node`, the browser one
 * bundled with esbuild and run in Debian's Chromium.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { createServer, type IncomingMessage } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { join, resolve } from 'node:path'
import type { Duplex } from 'node:stream'
import { promisify } from 'node:util'
import { build } from 'esbuild'
import { chromium, type Browser } from 'playwright-core'
import { CHROMIUM, CHROMIUM_ARGS, requireChromium } from '../helpers/chromium.js'
import { startProbeGateway } from '../helpers/tools.js'
import { jwtAuth, mintToken } from '../helpers/tokens.js'

const run = promisify(execFile)
const REPO = resolve('.')

/** A newcomer's shell: none of the npm_* variables `npm test` exports into this process. */
const CLEAN_ENV = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith('npm_') && k !== 'INIT_CWD' && k !== 'NODE_OPTIONS')
)

let scratch = ''
interface Packed { filename: string, files: Array<{ path: string }> }
let packed: Packed | null = null
let browser: Browser | null = null

/** The fenced `lang` blocks of one `## section` of the package README, in order. */
async function readmeBlocks (section: string, lang: string): Promise<string[]> {
  const readme = await readFile(join(REPO, 'packages/client/README.md'), 'utf8')
  const body = readme.split(/^## /m).find((part) => part.startsWith(`${section}\n`))
  assert.ok(body !== undefined, `the package README has a "## ${section}" section`)
  return [...body.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((m) => m[1] as string)
}

/**
 * The example app's own origin, as a reverse proxy in front of the gateway would give it: its
 * static files, and WebSocket upgrades passed through to the gateway byte for byte.
 */
async function serveWithGateway (
  files: Record<string, { type: string, body: string }>
): Promise<{ url: string, origin: string, upstream: (gatewayUrl: string) => void, close: () => Promise<void> }> {
  let gateway = new URL('http://127.0.0.1:0')
  const sockets = new Set<Duplex>()
  const server = createServer((req, res) => {
    const file = files[req.url ?? '']
    if (file === undefined) res.writeHead(404).end()
    else res.writeHead(200, { 'content-type': file.type }).end(file.body)
  })
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const upstream = connect(Number(gateway.port), gateway.hostname, () => {
      const headers = req.rawHeaders.reduce((text, part, i) => text + (i % 2 === 0 ? `${part}: ` : `${part}\r\n`), '')
      upstream.write(`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1\r\n${headers}\r\n`)
      upstream.write(head)
      socket.pipe(upstream).pipe(socket)
    })
    for (const s of [socket, upstream]) {
      sockets.add(s)
      s.on('close', () => { sockets.delete(s) })
      s.on('error', () => { socket.destroy(); upstream.destroy() })
    }
  })
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url: `${origin}/`,
    origin,
    // The gateway starts after the site: its allowed origins must name the site's port.
    upstream: (gatewayUrl) => { gateway = new URL(gatewayUrl) },
    async close () {
      for (const s of sockets) s.destroy()
      server.closeAllConnections()
      await new Promise((resolve) => { server.close(resolve) })
    }
  }
}

before(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-pack-'))
  scratch = join(dir, 'app')
  await mkdir(scratch)
  // prepack builds dist/ with tsc, exactly as `npm publish` would.
  const pack = ['pack', '-w', '@tollgate/client', '--pack-destination', dir, '--json']
  const { stdout } = await run('npm', pack, { cwd: REPO, env: CLEAN_ENV, timeout: 120_000 })
  packed = (JSON.parse(stdout) as Packed[])[0] ?? null
  assert.ok(packed !== null)
  await writeFile(join(scratch, 'package.json'), `${JSON.stringify({ name: 'scratch-app', version: '1.0.0', private: true }, null, 2)}\n`)
  // --prefer-offline: the cache when it holds ws (npm ci filled it), else the registry.
  const install = ['install', join(dir, packed.filename), '--prefer-offline', '--no-audit', '--no-fund']
  await run('npm', install, { cwd: scratch, env: CLEAN_ENV, timeout: 120_000 })
})

after(async () => {
  await browser?.close()
  if (scratch !== '') await rm(resolve(scratch, '..'), { recursive: true, force: true })
})

test('npm pack ships the compiled client, its types and README, and nothing that reaches outside the package', async () => {
  assert.ok(packed !== null)
  const files = packed.files.map((f) => f.path).sort()
  assert.deepEqual(files.filter((f) => !f.startsWith('dist/')), ['README.md', 'package.json'])
  for (const entry of ['index', 'node', 'client', 'stream', 'types', 'wire', 'errors', 'format']) {
    assert.ok(files.includes(`dist/${entry}.js`) && files.includes(`dist/${entry}.d.ts`), `dist/${entry}.js and .d.ts are packed`)
  }
  const installed = join(scratch, 'node_modules/@tollgate/client')
  for (const file of files.filter((f) => f.startsWith('dist/'))) {
    const code = await readFile(join(installed, file), 'utf8')
    for (const [, specifier] of code.matchAll(/\b(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
      assert.ok(specifier?.startsWith('./') === true || specifier === 'ws', `${file} imports ${String(specifier)}`)
    }
  }
  const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as { type: string, exports: Record<string, unknown> }
  assert.equal(manifest.type, 'module')
  assert.deepEqual(Object.keys(manifest.exports), ['.', './node', './package.json'])
  assert.ok(existsSync(join(scratch, 'node_modules/ws/package.json')), 'npm resolved the ws dependency')
})

test('the README\'s Node example, run from the scratch project, streams a turn, answers its approval, prints the result', async (t) => {
  const { g, probes } = await startProbeGateway(t, jwtAuth())
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'from-node' } }] }, { text: 'All done.' })
  const [example] = await readmeBlocks('Node', 'js')
  assert.ok(example !== undefined)
  await writeFile(join(scratch, 'tollgate-example.mjs'), example)
  const { stdout } = await run(process.execPath, ['tollgate-example.mjs', 'please run risky'], {
    cwd: scratch,
    env: { ...CLEAN_ENV, TOLLGATE_URL: g.url, TOLLGATE_TOKEN: await mintToken() },
    timeout: 30_000
  })
  assert.match(stdout, /^\n\? risky: .+ -> yes\n\n■ risky ok: done from-node\nAll done\.\nturn\.completed\n$/)
  assert.deepEqual(probes.runs.map((r) => [r.tool, r.label, r.finished]), [['risky', 'from-node', true]])
})

test('a CommonJS file of the scratch project can require both entry points (Node\'s require(esm))', async () => {
  await writeFile(join(scratch, 'check.cjs'), [
    "const { TollgateClient, TollgateClientError } = require('@tollgate/client')",
    "const { createNodeClient } = require('@tollgate/client/node')",
    "const client = createNodeClient({ url: 'http://127.0.0.1:1' })",
    "console.log(client instanceof TollgateClient, new TollgateClientError('X', 'y').code, client.wsUrl)",
    'client.close()'
  ].join('\n'))
  const { stdout } = await run(process.execPath, ['check.cjs'], { cwd: scratch, env: CLEAN_ENV, timeout: 30_000 })
  assert.equal(stdout, 'true X ws://127.0.0.1:1/v1/ws\n')
})

test('the package\'s types check in a strict TypeScript project that has neither DOM nor Node types', async () => {
  const dir = join(scratch, 'typed')
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022'], types: [], strict: true, noEmit: true
    },
    files: ['check.mts']
  }))
  await writeFile(join(dir, 'check.mts'), [
    "import { TollgateClient, TollgateClientError } from '@tollgate/client'",
    "import type { EventEnvelope, FetchLike, WebSocketFactory } from '@tollgate/client'",
    "import { createNodeClient } from '@tollgate/client/node'",
    'export function describe ({ event }: EventEnvelope): string {',
    "  if (event.kind === 'tool_result') return `${event.name} ${event.status} ${event.duration_ms}`",
    "  // @ts-expect-error a TurnEvent has no kind 'nope': the event types are real, not any",
    "  if (event.kind === 'nope') return 'never'",
    '  return event.kind',
    '}',
    'export function make (WebSocket: WebSocketFactory, fetch: FetchLike): TollgateClient {',
    "  return new TollgateClient({ url: 'http://gw', WebSocket, fetch })",
    '}',
    "export const fromNode: TollgateClient = createNodeClient({ url: 'http://gw', token: 'abc' })",
    "export const code: string = new TollgateClientError('X', 'y').code"
  ].join('\n'))
  await run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', dir], { cwd: dir, env: CLEAN_ENV, timeout: 60_000 })
})

test('the README\'s browser example, bundled from the scratch project, runs a turn with an approval in Chromium', async (t) => {
  requireChromium()
  const [html] = await readmeBlocks('Browser', 'html')
  const [app] = await readmeBlocks('Browser', 'js')
  assert.ok(html !== undefined && app !== undefined)
  await writeFile(join(scratch, 'app.js'), app)
  const bundled = await build({
    absWorkingDir: scratch, entryPoints: ['app.js'], bundle: true, format: 'esm', platform: 'browser', write: false, logLevel: 'silent'
  })
  const bundle = bundled.outputFiles[0]?.text ?? ''
  assert.match(bundle, /var TollgateClient = class/)
  assert.doesNotMatch(bundle, /WebSocketServer|from "ws"|require\("ws"\)/, 'the browser entry point pulls in no ws')

  browser ??= await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS })
  const page = await browser.newPage()
  t.after(async () => { await page.close() })
  const problems: string[] = []
  page.on('pageerror', (err) => { problems.push(err.message) })
  const dialogs: string[] = []
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.accept()
  })
  const site = await serveWithGateway({
    '/': { type: 'text/html; charset=utf-8', body: `<!doctype html>\n${html}` },
    '/app.js': { type: 'text/javascript; charset=utf-8', body: bundle }
  })
  t.after(site.close)
  // The page's origin is not the gateway's: a deployment lists it in ws.allowed_origins.
  const { g, probes } = await startProbeGateway(t, { ws: { allowed_origins: [site.origin] } })
  site.upstream(g.url)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'from-browser' } }] }, { text: 'Browser done.' })
  await page.goto(site.url)
  await page.fill('input[name="message"]', 'please run risky')
  await page.click('button')
  await page.locator('#out', { hasText: '(turn.completed)' }).waitFor({ timeout: 20_000 })
  assert.equal(await page.locator('#out').textContent(), '\n[risky: ok]\nBrowser done.\n(turn.completed)')
  assert.equal(dialogs.length, 1)
  assert.match(dialogs[0] ?? '', /^Allow risky\? /)
  assert.deepEqual(probes.runs.map((r) => [r.tool, r.label, r.finished]), [['risky', 'from-browser', true]])
  assert.deepEqual(problems, [])
})
