/**
 * The `tollgate` package as an application gets it: compiled and packed (`npm pack`), unpacked
 * into a scratch project outside the repository whose node_modules links the checkout's installed
 * dependencies (offline: no registry, no native rebuild), then examples/refund/app.mjs run there
 * with `node` against the fake provider. The refund tool asks for approval above 100 only.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, realpathSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js'
import { requestJson } from '../helpers/gateway.js'
import { eventually } from '../helpers/eventually.js'

const run = promisify(execFile)
const REPO = resolve('.')
const CLEAN_ENV = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith('npm_') && k !== 'INIT_CWD' && k !== 'NODE_OPTIONS')
)

interface Packed { filename: string, files: Array<{ path: string }> }
let dir = ''
let scratch = ''
let packed: Packed | null = null
let provider: FakeProvider | null = null
let app: ChildProcess | null = null
let url = ''

/** The scratch project's node_modules: the unpacked tarball, and links to the dependencies it declares. */
async function installOffline (tarball: string): Promise<void> {
  const target = join(scratch, 'node_modules/tollgate')
  await mkdir(target, { recursive: true })
  await run('tar', ['-xzf', tarball, '-C', target, '--strip-components=1'])
  const manifest = JSON.parse(await readFile(join(target, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
  for (const name of Object.keys(manifest.dependencies)) {
    const link = join(scratch, 'node_modules', name)
    await mkdir(dirname(link), { recursive: true })
    await symlink(realpathSync(join(REPO, 'node_modules', name)), link, 'dir')
  }
}

async function startApp (): Promise<void> {
  const child = spawn(process.execPath, ['app.mjs'], {
    cwd: scratch,
    env: { ...CLEAN_ENV, OPENAI_BASE_URL: provider?.baseUrl, OPENAI_API_KEY: 'sk-test', OPENAI_MODEL: 'fake-model', PORT: '0', LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  app = child
  let out = ''
  let err = ''
  child.stderr?.on('data', (chunk: Buffer) => { err += chunk.toString() })
  url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /refund app listening on (\S+)\n/.exec(out)
      if (match !== null) resolve(match[1] as string)
    })
    child.once('exit', (code) => { reject(new Error(`the app exited with ${String(code)}: ${err}`)) })
  })
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-embed-'))
  scratch = join(dir, 'app')
  await mkdir(scratch)
  // What prepack's build does for the server side (the client and UI bundle are built apart).
  await run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: REPO, timeout: 240_000 })
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir, '--json'], { cwd: REPO, env: CLEAN_ENV, timeout: 120_000 })
  packed = (JSON.parse(stdout) as Packed[])[0] ?? null
  assert.ok(packed !== null)
  await writeFile(join(scratch, 'package.json'), `${JSON.stringify({ name: 'refund-app', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`)
  await installOffline(join(dir, packed.filename))
  await copyFile(join(REPO, 'examples/refund/app.mjs'), join(scratch, 'app.mjs'))
  provider = await startFakeProvider()
  await startApp()
})

after(async () => {
  if (app !== null && app.exitCode === null) {
    const exited = new Promise((resolve) => app?.once('exit', resolve))
    app.kill('SIGTERM')
    await exited
  }
  await provider?.close()
  if (dir !== '') await rm(dir, { recursive: true, force: true })
})

test('npm pack ships the compiled gateway with its types, the browser client, and no sources or tests', () => {
  assert.ok(packed !== null)
  const files = packed.files.map((f) => f.path)
  for (const file of ['dist/src/embed/index.js', 'dist/src/embed/index.d.ts', 'dist/src/app/server.js', 'public/index.html', 'package.json']) {
    assert.ok(files.includes(file), `${file} is packed`)
  }
  assert.deepEqual(files.filter((f) => /^(src|test|routes|schemas|scripts)\//.test(f) || f.endsWith('.map') || (f.endsWith('.ts') && !f.endsWith('.d.ts'))), [])
  assert.ok(existsSync(join(scratch, 'node_modules/tollgate/dist/src/embed/tool.d.ts')))
})

async function turnUntil (turnId: string, check: (turn: any) => boolean, what: string): Promise<any> {
  let turn: any
  await eventually(async () => {
    const res = await requestJson(url, 'GET', `/v1/turns/${turnId}`)
    assert.equal(res.status, 200)
    turn = res.body
    return check(turn)
  }, { what })
  return turn
}

async function startRefundTurn (amount: number): Promise<string> {
  provider?.enqueue({ toolCalls: [{ id: `c${amount}`, name: 'refund', arguments: { order_id: `A-${amount}`, amount } }] }, { text: 'Refund handled.' })
  const res = await requestJson(url, 'POST', '/v1/turns', { message: `refund ${amount} on A-${amount}` })
  assert.equal(res.status, 202, JSON.stringify(res.body))
  return res.body.turn_id
}

test('the outside app\'s refund of 50 runs without asking anyone', async () => {
  const turnId = await startRefundTurn(50)
  const turn = await turnUntil(turnId, (t) => t.status !== 'running', 'the 50 turn to finish')
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, 'Refund handled.')
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.name, c.status, c.output]), [['refund', 'ok', 'refunded 50 on order A-50']])
  assert.deepEqual(turn.approvals, [])
})

test('the outside app\'s refund of 500 waits for approval, then runs once approved', async () => {
  const turnId = await startRefundTurn(500)
  const waiting = await turnUntil(turnId, (t) => t.pending_approvals.length > 0, 'the 500 refund to wait for approval')
  assert.equal(waiting.status, 'running')
  assert.deepEqual(waiting.tool_calls, [])
  const [request] = waiting.pending_approvals
  assert.equal(request.tool, 'refund')
  assert.equal(request.risk, 'high')
  assert.deepEqual(request.display, [{ name: 'amount', value: '500' }, { name: 'order_id', value: 'A-500' }])
  assert.match(request.reason, /needsApproval/)
  const answer = await requestJson(url, 'POST', `/v1/approvals/${request.request_id as string}`, { decision: 'yes' })
  assert.equal(answer.status, 200, JSON.stringify(answer.body))
  const turn = await turnUntil(turnId, (t) => t.status !== 'running', 'the 500 turn to finish')
  assert.equal(turn.status, 'completed')
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.name, c.status, c.output]), [['refund', 'ok', 'refunded 500 on order A-500']])
  assert.deepEqual(turn.approvals.map((a: any) => [a.tool, a.decision, a.channel]), [['refund', 'yes', 'rest']])
})
