/**
 * The shell sandbox under real attack: a model (or a prompt injection) asks the shell to read the
 * gateway's secrets, its store and other tenants' files, to write outside its workspace, to
 * reach the network and to outlive the gateway. Where bubblewrap cannot run on this machine the
 * sandboxed tests are skipped with the reason; the gateway's refusal to offer `shell` then is
 * tested below regardless.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync } from 'node:fs'
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { deepMerge } from '../../src/core/config.js'
import { workspaceSlug } from '../../src/tools/builtin/workspace-layout.js'
import { clusterOverrides, scratchWorkspace, spawnGateway } from '../helpers/cluster.js'
import { startFakeProvider, type FakeProvider, type RecordedRequest } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/log-capture.js'
import { processesWith, untilFileExists, untilNoProcessWith } from '../helpers/processes.js'
import { deferrer, type Defer } from '../helpers/services.js'
import { mintToken } from '../helpers/tokens.js'
import { runTurn } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

/** Whether the default gateway offers `shell` on this machine, and if not, why (its start-up log line). */
const HERE = await (async () => {
  const logs = captureLogs('info')
  const g = await startGateway({ logger: logs.logger })
  try {
    const refusal = logs.lines().find((l) => typeof l.msg === 'string' && l.msg.startsWith('the shell tool is disabled'))
    return { works: g.gateway.turns.catalog.has('shell'), reason: String(refusal?.reason ?? 'unknown') }
  } finally {
    await g.close()
  }
})()

function sandboxed (t: TestContext): boolean {
  if (HERE.works) return true
  t.skip(`bubblewrap cannot create its sandbox on this machine (${HERE.reason}): NOT TESTED here; the gateway refuses shell instead`)
  return false
}

// Commands run without a prompt, so each test is about the sandbox, not the approval flow.
const UNPROMPTED = { risk_profiles: { default: { level: 'full' } }, tools: { shell: { require_approval_for_medium_risk: false } } }

function shellCalls (commands: readonly string[]): Array<{ id: string, name: string, arguments: Record<string, unknown> }> {
  return commands.map((command, i) => ({ id: `c${i}`, name: 'shell', arguments: { command } }))
}

/** What the model was told each call returned, from the provider request after the round. */
function toolResults (request: RecordedRequest | undefined): string[] {
  return (request?.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => m.content ?? '')
}

/** A loopback HTTP server that counts the requests reaching it. */
async function listener (defer: Defer): Promise<{ url: string, hits: () => number }> {
  let hits = 0
  const server = createServer((_req, res) => { hits++; res.end('reached') })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  defer(async () => { await new Promise((resolve) => server.close(resolve)) })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, hits: () => hits }
}

async function gateway (t: TestContext, overrides: unknown = {}): Promise<TestGateway> {
  const g = await startGateway({ overrides: deepMerge(UNPROMPTED, overrides) })
  t.after(() => g.close())
  return g
}

interface Secrets {
  jwt: string
  apiKey: string
  env: Record<string, string>
}

function secrets (): Secrets {
  const jwt = `jwt-secret-${randomBytes(24).toString('hex')}`
  const apiKey = `sk-live-${randomBytes(24).toString('hex')}`
  return { jwt, apiKey, env: { TOLLGATE_TEST_JWT_SECRET: jwt, TOLLGATE_TEST_PROVIDER_KEY: apiKey } }
}

/** A gateway process holding real secrets in its environment, with a SQLite store, as deployed. */
async function deployedGateway (
  defer: Defer, provider: FakeProvider, secret: Secrets, extra: unknown = {}
): Promise<{ g: Awaited<ReturnType<typeof spawnGateway>>, root: string, dbPath: string }> {
  const root = await scratchWorkspace(defer)
  const data = await mkdtemp(join(tmpdir(), 'tollgate-data-'))
  defer(async () => { await rm(data, { recursive: true, force: true }) })
  const dbPath = join(data, 'tollgate.db')
  const overrides = clusterOverrides({ provider }, root, deepMerge({
    ...UNPROMPTED,
    auth: { mode: 'jwt', secret_env: 'TOLLGATE_TEST_JWT_SECRET', issuer: 'https://idp.test.example', audience: 'tollgate' },
    providers: { fake: { api_key_env: 'TOLLGATE_TEST_PROVIDER_KEY' } },
    store: { kind: 'sqlite', sqlite: { path: dbPath } }
  }, extra))
  const token = await mintToken({ tenant: 'acme', key: new TextEncoder().encode(secret.jwt) })
  const g = await spawnGateway(defer, overrides, { env: secret.env, token })
  return { g, root, dbPath }
}

test('a sandboxed command cannot read the gateway\'s environment, store or other files, write outside its workspace or reach the network', async (t) => {
  if (!sandboxed(t)) return
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const secret = secrets()
  const outside = await listener(defer)
  const { g, root, dbPath } = await deployedGateway(defer, provider, secret)
  const otherTenant = join(root, workspaceSlug('globex'))
  await mkdir(otherTenant, { recursive: true })
  await writeFile(join(otherTenant, 'plans.txt'), 'globex confidential plans')

  const commands = [
    'cat /proc/$PPID/environ | tr \'\\0\' \'\\n\'',
    'env',
    `cat ${dbPath} 2>&1; echo "rc=$?"`,
    `cat ${join(otherTenant, 'plans.txt')} 2>&1; echo "rc=$?"`,
    `cat ${join(process.cwd(), 'package.json')} 2>&1; echo "rc=$?"`,
    `{ echo pwned > ${join(root, 'pwned.txt')}; echo pwned > ${join(process.cwd(), 'pwned.txt')}; } 2>&1; echo "rc=$?"`,
    `curl -sS -m 5 ${outside.url} 2>&1; echo "rc=$?"`
  ]
  provider.enqueue({ toolCalls: shellCalls(commands) }, { text: 'done' })
  const done = await g.http('POST', '/v1/turns?wait=true', { message: 'look around' })
  assert.equal(done.body.status, 'completed', JSON.stringify(done.body))

  const next = provider.requests.at(-1)
  const [environ, env, store, other, cwdFile, write, network] = toolResults(next)
  const body = JSON.stringify(next?.body)
  assert.equal(body.includes(secret.jwt), false, 'the JWT secret reached the provider')
  assert.equal(body.includes(secret.apiKey), false, 'the provider API key reached the provider')
  // Whatever the sandbox's pid 1 shows of its environment is the allow-list, never the gateway's.
  for (const line of (environ ?? '').split('\n').filter((l) => l.includes('='))) assert.match(line, /^(PATH|LANG|LC_ALL|TZ|HOME)=/)
  const names = (env ?? '').split('\n').filter((l) => l !== '').map((l) => l.split('=')[0])
  assert.deepEqual(names.filter((n) => !['HOME', 'PATH', 'PWD', 'LANG', 'LC_ALL', 'TZ'].includes(n ?? '')), [])
  assert.ok(names.includes('HOME') && names.includes('PATH'))
  assert.match(store ?? '', /No such file or directory\nrc=1\n$/)
  assert.match(other ?? '', /No such file or directory\nrc=1\n$/)
  assert.match(cwdFile ?? '', /No such file or directory\nrc=1\n$/)
  assert.match(write ?? '', /cannot create [^\n]*\/pwned\.txt[^\n]*\n[^\n]*cannot create [^\n]*\/pwned\.txt[^\n]*\nrc=2\n$/)
  assert.equal(existsSync(join(root, 'pwned.txt')), false)
  assert.equal(existsSync(join(process.cwd(), 'pwned.txt')), false)
  assert.match(network ?? '', /rc=[1-9]\d*\n$/)
  assert.equal(outside.hits(), 0)
})

test('without the sandbox (sandbox = "none") the same environ read hands the gateway\'s secrets to the provider', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const secret = secrets()
  const { g } = await deployedGateway(defer, provider, secret, { tools: { shell: { sandbox: 'none' } } })
  provider.enqueue({ toolCalls: shellCalls(['cat /proc/$PPID/environ | tr \'\\0\' \'\\n\'']) }, { text: 'done' })
  const done = await g.http('POST', '/v1/turns?wait=true', { message: 'look around' })
  assert.equal(done.body.status, 'completed', JSON.stringify(done.body))
  const [environ] = toolResults(provider.requests.at(-1))
  assert.match(environ ?? '', new RegExp(`^TOLLGATE_TEST_JWT_SECRET=${secret.jwt}$`, 'm'))
})

test('a sandboxed command reaches the network when its agent\'s risk profile allows it', async (t) => {
  if (!sandboxed(t)) return
  const outside = await listener(deferrer(t))
  const g = await gateway(t, { risk_profiles: { default: { level: 'full', shell_network: true } } })
  g.provider.enqueue({ toolCalls: shellCalls([`curl -sS -m 5 ${outside.url}`]) }, { text: 'done' })
  const { turn } = await runTurn(g, { message: 'fetch' })
  assert.equal(turn.tool_calls[0].output, 'reached')
  assert.equal(outside.hits(), 1)
})

test('each sandboxed command starts in its tenant\'s workspace with a private, empty /tmp', async (t) => {
  if (!sandboxed(t)) return
  const g = await gateway(t)
  const marker = `tollgate-tmp-${randomBytes(6).toString('hex')}`
  g.provider.enqueue({ toolCalls: shellCalls([`pwd; echo x > /tmp/${marker}; ls /tmp`, 'ls -A /tmp']) }, { text: 'done' })
  const { turn } = await runTurn(g, { message: 'tmp' })
  // The workspace itself lies below /tmp in tests, so /tmp holds the folder it is mounted in.
  const mountedAt = `${relative('/tmp', g.workspaceRoot).split('/')[0] ?? ''}\n`
  assert.deepEqual(turn.tool_calls.map((c: { output: string }) => c.output), [`${g.workspace}\n${mountedAt}${marker}\n`, mountedAt])
  assert.equal(existsSync(join('/tmp', marker)), false)
})

test('a sandboxed command is stopped by its CPU-time limit', async (t) => {
  if (!sandboxed(t)) return
  const g = await gateway(t, { tools: { shell: { limits: { cpu_seconds: 1 } } } })
  g.provider.enqueue({ toolCalls: shellCalls(['while :; do :; done']) }, { text: 'done' })
  const { turn } = await runTurn(g, { message: 'spin' })
  // Killed by the kernel (SIGKILL at the hard limit, or SIGXCPU), long before the 60 s timeout.
  assert.match(turn.tool_calls[0].output, /^Error: exit code (137|152)$/)
})

test('a sandboxed command cannot allocate more memory than its limit', async (t) => {
  if (!sandboxed(t)) return
  const g = await gateway(t, { tools: { shell: { limits: { memory_bytes: 268_435_456 } } } })
  g.provider.enqueue({ toolCalls: shellCalls(['awk \'BEGIN { s = sprintf("%300000000s", "") }\' 2>&1; echo "rc=$?"']) }, { text: 'done' })
  const { turn } = await runTurn(g, { message: 'allocate' })
  assert.match(turn.tool_calls[0].output, /([Cc]annot allocate memory|out of memory)[^\n]*\nrc=[1-9]\d*\n$/)
})

test('a sandboxed command cannot write a file larger than its limit', async (t) => {
  if (!sandboxed(t)) return
  const g = await gateway(t, { tools: { shell: { limits: { file_bytes: 1_048_576 } } } })
  g.provider.enqueue({ toolCalls: shellCalls(['head -c 3000000 /dev/zero > big.bin']) }, { text: 'done' })
  const { turn } = await runTurn(g, { message: 'write' })
  assert.equal(turn.tool_calls[0].status, 'error')
  assert.equal((await stat(join(g.workspace, 'big.bin'))).size, 1_048_576)
})

test('a sandboxed command cannot start more processes than its limit', async (t) => {
  if (!sandboxed(t)) return
  const g = await gateway(t, { tools: { shell: { limits: { processes: 16 } } } })
  g.provider.enqueue({ toolCalls: shellCalls(['sh -c \'for i in $(seq 64); do sleep 30.2468 & done; wait\' 2>&1; echo "rc=$?"']) }, { text: 'done' })
  const { turn } = await runTurn(g, { message: 'fork' })
  assert.match(turn.tool_calls[0].output, /Cannot fork\nrc=2\n$/)
  await untilNoProcessWith('sleep 30.2468')
})

test('a sandboxed command that runs past its timeout is killed with everything it started', async (t) => {
  if (!sandboxed(t)) return
  const g = await gateway(t, { tools: { shell: { timeout_ms: 500 } } })
  g.provider.enqueue({ toolCalls: shellCalls(['sleep 30.1357 & sleep 30.1357']) }, { text: 'done' })
  const { turn } = await runTurn(g, { message: 'wait' })
  assert.equal(turn.tool_calls[0].output, 'Error: command timed out after 500 ms')
  await untilNoProcessWith('sleep 30.1357')
})

test('a sandboxed command leaves no background process behind when it exits', async (t) => {
  if (!sandboxed(t)) return
  const g = await gateway(t)
  g.provider.enqueue({ toolCalls: shellCalls(['(sleep 30.9753; touch late) > /dev/null 2>&1 & echo started']) }, { text: 'done' })
  const { turn } = await runTurn(g, { message: 'background' })
  assert.equal(turn.tool_calls[0].output, 'started\n')
  await untilNoProcessWith('sleep 30.9753')
  assert.equal(existsSync(join(g.workspace, 'late')), false)
})

test('tenant B\'s sandboxed shell cannot read tenant A\'s file', async (t) => {
  if (!sandboxed(t)) return
  const g = await gateway(t, { auth: { mode: 'jwt', secret: 'tollgate-test-secret-0123456789-abcdefghijklmnop', issuer: 'https://idp.test.example', audience: 'tollgate' } })
  await writeFile(join(g.tenantWorkspace('acme'), 'secret.txt'), 'acme secret plans')
  const tokenB = await mintToken({ tenant: 'globex', sub: 'bob' })
  const aFile = join(g.tenantWorkspace('acme'), 'secret.txt')
  g.provider.enqueue({ toolCalls: shellCalls([`cat ${aFile} 2>&1; echo "rc=$?"`, 'ls -A ..; cat ../*/secret.txt 2>&1; echo "rc=$?"']) }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'peek' }, { authorization: `Bearer ${tokenB}` })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  const [direct, listing] = toolResults(g.provider.requests.at(-1))
  assert.match(direct ?? '', /No such file or directory\nrc=1\n$/)
  assert.equal(listing, `${workspaceSlug('globex')}\ncat: '../*/secret.txt': No such file or directory\nrc=1\n`)
  assert.equal(JSON.stringify(g.provider.requests).includes('acme secret plans'), false)
})

test('SIGKILL of the gateway while a sandboxed command sleeps leaves that command no chance to act', async (t) => {
  if (!sandboxed(t)) return
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const root = await scratchWorkspace(defer)
  const child = await spawnGateway(defer, clusterOverrides({ provider }, root, UNPROMPTED))
  provider.enqueue({ toolCalls: shellCalls(['touch started; sleep 3.0717; touch X']) }, { text: 'done' })
  const accepted = await child.http('POST', '/v1/turns', { message: 'go' })
  assert.equal(accepted.status, 202)
  const workspace = join(root, workspaceSlug('local'))
  await untilFileExists(join(workspace, 'started'), 10_000)
  await child.kill()
  await untilNoProcessWith('sleep 3.0717')
  assert.equal(existsSync(join(workspace, 'X')), false)
})

test('with sandbox = "none" the next start kills the command a killed gateway left running', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const root = await scratchWorkspace(defer)
  const ledger = join(root, '.tool-processes')
  const none = { tools: { shell: { sandbox: 'none', require_approval_for_medium_risk: false, process_ledger_dir: ledger } } }
  const child = await spawnGateway(defer, clusterOverrides({ provider }, root, deepMerge(UNPROMPTED, none)))
  provider.enqueue({ toolCalls: shellCalls(['touch started; sleep 30.0717; touch X']) }, { text: 'done' })
  assert.equal((await child.http('POST', '/v1/turns', { message: 'go' })).status, 202)
  const workspace = join(root, workspaceSlug('local'))
  await untilFileExists(join(workspace, 'started'), 10_000)
  // The gateway records the group right after spawning it; on a busy machine the command may
  // have run its first step before that write.
  await eventually(async () => (await readdir(ledger).catch(() => [])).length === 1, { what: 'the running command to be recorded' })
  await child.kill()
  assert.notDeepEqual(await processesWith('sleep 30.0717'), [], 'unconfined, the command outlives the crash')

  const logs = captureLogs('info')
  const next = await startGateway({ provider, logger: logs.logger, overrides: none })
  defer(async () => { await next.close() })
  await untilNoProcessWith('sleep 30.0717')
  assert.deepEqual(await readdir(ledger), [])
  assert.equal(logs.lines().filter((l) => l.msg === 'killed a tool process group left running by a stopped gateway').length, 1)
  assert.equal(existsSync(join(workspace, 'X')), false)
})

test('a gateway whose bubblewrap does not work leaves shell out, says why once, and still serves the other tools', async (t) => {
  const logs = captureLogs('info')
  const g = await startGateway({ logger: logs.logger, overrides: { tools: { shell: { bwrap_path: '/bin/false' } } } })
  t.after(() => g.close())
  const refusals = logs.lines().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('the shell tool is disabled'))
  assert.equal(refusals.length, 1)
  assert.equal(refusals[0]?.reason, 'exit code 1')
  assert.equal(refusals[0]?.level, 50)
  const tools = await g.http('GET', '/v1/tools')
  assert.deepEqual(tools.body.tools.map((tool: { name: string }) => tool.name), ['file_read', 'file_write', 'http_request'])
  g.provider.enqueue({ toolCalls: shellCalls(['id']) }, { text: 'no shell here' })
  const { turn } = await runTurn(g, { message: 'id please' })
  assert.equal(turn.tool_calls[0].output, 'Unknown tool: shell')
  assert.deepEqual(g.provider.requests[0]?.body.tools?.map((tool) => tool.function.name), ['file_read', 'file_write', 'http_request'])
  const asked = await g.http('POST', '/v1/turns', { message: 'id please', tools: { allow: ['shell'] } })
  assert.deepEqual([asked.status, asked.body.code], [400, 'UNKNOWN_TOOL'])
})

test('a gateway whose bubblewrap is missing leaves shell out and names the missing program', async (t) => {
  const logs = captureLogs('info')
  const g = await startGateway({ logger: logs.logger, overrides: { tools: { shell: { bwrap_path: '/nonexistent/bwrap' } } } })
  t.after(() => g.close())
  const refusal = logs.lines().find((l) => typeof l.msg === 'string' && l.msg.startsWith('the shell tool is disabled'))
  assert.equal(refusal?.reason, 'cannot run /nonexistent/bwrap: ENOENT')
  assert.equal(g.gateway.turns.catalog.has('shell'), false)
})

test('sandbox = "none" offers shell without probing bubblewrap, and warns that commands run unconfined', async (t) => {
  const logs = captureLogs('info')
  const g = await startGateway({ logger: logs.logger, overrides: { tools: { shell: { sandbox: 'none', bwrap_path: '/bin/false' } } } })
  t.after(() => g.close())
  assert.equal(g.gateway.turns.catalog.has('shell'), true)
  assert.equal(logs.lines().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('the shell tool is disabled')).length, 0)
  assert.equal(logs.lines().filter((l) => l.msg === 'tools.shell.sandbox is "none": shell commands run unconfined, with the gateway\'s files, network and user').length, 1)
})

test('the workspace of a sandboxed command is its tenant\'s folder and what it writes there is the tenant\'s', async (t) => {
  if (!sandboxed(t)) return
  const g = await gateway(t)
  g.provider.enqueue({ toolCalls: [...shellCalls(['echo from-shell > made.txt']), { id: 'r1', name: 'file_read', arguments: { path: 'made.txt' } }] }, { text: 'done' })
  const { turn } = await runTurn(g, { message: 'make' })
  assert.deepEqual(turn.tool_calls.map((c: { output: string }) => c.output), ['(no output)', 'from-shell\n'])
  assert.equal(await readFile(join(g.workspace, 'made.txt'), 'utf8'), 'from-shell\n')
})

test('a gateway running as an unprivileged user sandboxes commands in a user namespace, with the same confinement', {
  skip: process.getuid?.() !== 0 ? 'this suite already runs unprivileged: every sandboxed test above took this path' : false
}, async (t) => {
  if (!sandboxed(t)) return
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const user = { uid: 65534, gid: 65534 }
  // An unprivileged gateway needs a workspace it owns, in a folder its sandbox can be pointed at.
  const base = await mkdtemp(join(tmpdir(), 'tollgate-unprivileged-'))
  defer(async () => { await rm(base, { recursive: true, force: true }) })
  await chmod(base, 0o755)
  const root = join(base, 'workspace')
  const data = join(base, 'data')
  for (const dir of [root, data]) {
    await mkdir(dir)
    await chown(dir, user.uid, user.gid)
  }
  const secret = secrets()
  const overrides = clusterOverrides({ provider }, root, deepMerge(UNPROMPTED, {
    providers: { fake: { api_key_env: 'TOLLGATE_TEST_PROVIDER_KEY' } },
    store: { kind: 'sqlite', sqlite: { path: join(data, 'tollgate.db') } },
    tools: { shell: { limits: { processes: 16 } } }
  }))
  const g = await spawnGateway(defer, overrides, { env: secret.env, user })
  const offered = (await g.http('GET', '/v1/tools')).body.tools.map((tool: { name: string }) => tool.name)
  if (!offered.includes('shell')) {
    t.skip('unprivileged user namespaces are not available here: the unprivileged gateway refused shell (checked)')
    return
  }
  provider.enqueue({
    toolCalls: shellCalls([
      // The init namespace maps 4294967295 ids; the sandbox's namespace maps one.
      'id -u; awk \'{ print $1, $3 }\' /proc/self/uid_map',
      'cat /proc/$PPID/environ | tr \'\\0\' \'\\n\' | cut -d= -f1 | sort',
      `cat ${join(data, 'tollgate.db')} 2>&1; echo "rc=$?"`,
      'sh -c \'for i in $(seq 64); do sleep 30.8642 & done; wait\' 2>&1; echo "rc=$?"'
    ])
  }, { text: 'done' })
  const done = await g.http('POST', '/v1/turns?wait=true', { message: 'look around' })
  assert.equal(done.body.status, 'completed', JSON.stringify(done.body))
  const [who, environ, store, fork] = toolResults(provider.requests.at(-1))
  assert.equal(who, '65534\n65534 1\n')
  assert.deepEqual((environ ?? '').split('\n').filter((n) => n !== '').filter((n) => !['HOME', 'PATH', 'LANG', 'LC_ALL', 'TZ'].includes(n)), [])
  assert.match(store ?? '', /No such file or directory\nrc=1\n$/)
  assert.match(fork ?? '', /Cannot fork\nrc=2\n$/)
  assert.equal(JSON.stringify(provider.requests.at(-1)?.body).includes(secret.apiKey), false)
  await untilNoProcessWith('sleep 30.8642')
})
