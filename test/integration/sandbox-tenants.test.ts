/**
 * Tenants of one gateway cannot starve each other or climb out of their sandboxes: a root
 * gateway runs each tenant's commands as a uid of its own and, where the machine lets it make
 * cgroups, in per-tenant and per-command groups; every sandbox refuses new namespaces and the
 * kernel keyrings (seccomp). Real gateways, real bubblewrap, real fork bombs. Where bubblewrap
 * cannot run, or the suite does not run as root, or the machine has no cgroups for the gateway,
 * the tests that need it are skipped with the reason.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { chmod, chown, mkdir, mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deepMerge } from '../../src/core/config.js'
import { clusterOverrides, spawnGateway } from '../helpers/cluster.js'
import type { EventEnvelope } from '../../schemas/events.js'
import { startFakeProvider, type RecordedRequest } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/log-capture.js'
import { processesWith, untilNoProcessWith } from '../helpers/processes.js'
import { deferrer } from '../helpers/services.js'
import { mintToken } from '../helpers/tokens.js'
import { eventually } from '../helpers/eventually.js'

const ROOT = process.getuid?.() === 0

/** Whether the default gateway offers `shell` here, and whether its commands get cgroups (else why not). */
const HERE = await (async () => {
  const logs = captureLogs('info')
  const g = await startGateway({ logger: logs.logger })
  try {
    const line = (prefix: string): Record<string, unknown> | undefined =>
      logs.lines().find((l) => typeof l.msg === 'string' && l.msg.startsWith(prefix))
    return {
      shell: g.gateway.turns.catalog.has('shell'),
      shellRefusal: String(line('the shell tool is disabled')?.reason ?? ''),
      noCgroups: line('sandboxed commands get no cgroups')?.reason as string | undefined
    }
  } finally {
    await g.close()
  }
})()

function rootSandbox (t: TestContext): boolean {
  if (!HERE.shell) {
    t.skip(`bubblewrap cannot create its sandbox on this machine (${HERE.shellRefusal}): NOT TESTED here`)
    return false
  }
  if (!ROOT) {
    t.skip('the suite does not run as root: per-tenant uids and cgroups are a root gateway\'s (NOT TESTED here)')
    return false
  }
  return true
}

function withCgroups (t: TestContext): boolean {
  if (!rootSandbox(t)) return false
  if (HERE.noCgroups !== undefined) {
    t.skip(`the gateway cannot make cgroups on this machine (${HERE.noCgroups}): NOT TESTED here`)
    return false
  }
  return true
}

const JWT = { mode: 'jwt', secret: 'tollgate-test-secret-0123456789-abcdefghijklmnop', issuer: 'https://idp.test.example', audience: 'tollgate' }
// Commands and file writes run without a prompt, so each test is about the sandbox.
const UNPROMPTED = { risk_profiles: { default: { level: 'full' } }, tools: { shell: { require_approval_for_medium_risk: false } } }

async function gateway (t: TestContext, overrides: unknown = {}): Promise<TestGateway> {
  // Output lines stream as progress at once: the fork bomb's tell the test it is at its limit.
  const base = deepMerge(UNPROMPTED, { auth: JWT, tools: { shell: { progress_after_ms: 0 } } })
  const g = await startGateway({ overrides: deepMerge(base, overrides) })
  t.after(() => g.close())
  return g
}

async function as (tenant: string): Promise<Record<string, string>> {
  return { authorization: `Bearer ${await mintToken({ tenant, sub: `${tenant}-user` })}` }
}

function shellCalls (commands: readonly string[]): Array<{ id: string, name: string, arguments: Record<string, unknown> }> {
  return commands.map((command, i) => ({ id: `c${i}`, name: 'shell', arguments: { command } }))
}

/** What the model was told each call returned, from the provider request after the round. */
function toolResults (request: RecordedRequest | undefined): string[] {
  return (request?.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => m.content ?? '')
}

/**
 * Every process forks for ever and, refused, tries again: the bomb holds its limit until it is
 * killed, and says once per process when it got there. (The classifier would refuse a shell bomb
 * spelled on the command line; a script it cannot see into runs.)
 */
const BOMB = [
  'import os, time',
  'said = False',
  'while True:',
  '    try:',
  '        os.fork()',
  '    except OSError:',
  '        if not said:',
  '            print("fork refused", flush=True)',
  '            said = True',
  '        time.sleep(0.05)',
  ''
].join('\n')

/** Whether the turn's shell call has streamed a line saying a fork was refused: the bomb is at its limit. */
async function bombAtItsLimit (g: TestGateway, turnId: string, headers: Record<string, string>): Promise<boolean> {
  const res = await g.http('GET', `/v1/turns/${turnId}/events?after_seq=0`, undefined, headers)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return (res.body.events as EventEnvelope[]).some((e) => e.event.kind === 'tool.progress' && e.event.message === 'fork refused')
}

/**
 * Tenant acme starts a fork bomb and keeps it running; once its output says a fork was refused
 * (its processes are at their limit), tenant globex runs `echo hi | cat`. Answers globex's result,
 * then cancels acme's turn and waits until none of the bomb's processes is left.
 */
async function bombBeside (g: TestGateway): Promise<{ status: string, results: string[], globexUid: number }> {
  const acmeUid = g.gateway.workspaces.ownerFor('acme')?.uid
  const globexUid = g.gateway.workspaces.ownerFor('globex')?.uid
  assert.ok(acmeUid !== undefined && globexUid !== undefined && acmeUid !== globexUid)
  g.provider.enqueue({
    toolCalls: [
      { id: 'w', name: 'file_write', arguments: { path: 'bomb.py', content: BOMB } },
      ...shellCalls(['python3 bomb.py'])
    ]
  })
  const acme = await as('acme')
  const started = await g.http('POST', '/v1/turns', { message: 'bomb' }, acme)
  assert.equal(started.status, 202, JSON.stringify(started.body))
  const turnId = String(started.body.turn_id)
  await eventually(async () => await bombAtItsLimit(g, turnId, acme), { what: 'acme\'s fork bomb to reach its limit', timeoutMs: 20_000 })
  assert.notDeepEqual(await processesWith('bomb.py'), [])

  g.provider.enqueue({ toolCalls: shellCalls(['echo hi | cat; id -u']) }, { text: 'done' })
  const globex = await g.http('POST', '/v1/turns?wait=true', { message: 'hi' }, await as('globex'))
  const results = toolResults(g.provider.requests.at(-1))

  const cancelled = await g.http('DELETE', `/v1/turns/${turnId}`, undefined, acme)
  assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body))
  await eventually(async () => (await g.http('GET', `/v1/turns/${turnId}`, undefined, acme)).body.status === 'cancelled', { what: 'acme\'s turn to end', timeoutMs: 20_000 })
  await untilNoProcessWith('bomb.py', 20_000)
  return { status: globex.body.status, results, globexUid }
}

test('a fork bomb in one tenant\'s command leaves another tenant\'s commands running', async (t) => {
  if (!withCgroups(t)) return
  const g = await gateway(t)
  const { status, results, globexUid } = await bombBeside(g)
  assert.equal(status, 'completed', JSON.stringify(results))
  assert.deepEqual(results, [`hi\n${globexUid}\n`])
})

test('without cgroups, a tenant\'s own uid alone keeps another tenant\'s fork bomb from stopping its commands', async (t) => {
  if (!rootSandbox(t)) return
  const g = await gateway(t, { tools: { shell: { cgroups: { mode: 'off' } } } })
  const { status, results, globexUid } = await bombBeside(g)
  assert.equal(status, 'completed', JSON.stringify(results))
  assert.deepEqual(results, [`hi\n${globexUid}\n`])
})

test('each tenant\'s commands run as its own uid and what they and the file tools make belongs to it', async (t) => {
  if (!rootSandbox(t)) return
  const g = await gateway(t)
  const owner = g.gateway.workspaces.ownerFor('acme')
  g.provider.enqueue({
    toolCalls: [
      { id: 'w', name: 'file_write', arguments: { path: 'notes/by-tool.txt', content: 'x' } },
      ...shellCalls(['id -u; id -g; id -G; echo y > by-shell.txt; echo z >> notes/by-tool.txt; cat notes/by-tool.txt'])
    ]
  }, { text: 'done' })
  const done = await g.http('POST', '/v1/turns?wait=true', { message: 'who am i' }, await as('acme'))
  assert.equal(done.body.status, 'completed', JSON.stringify(done.body))
  const [written, who] = toolResults(g.provider.requests.at(-1))
  assert.equal(written, 'Wrote 1 bytes to notes/by-tool.txt')
  assert.equal(who, `${owner?.uid}\n${owner?.gid}\n${owner?.gid}\nxz\n`)
  const dir = g.tenantWorkspace('acme')
  for (const file of ['.', 'notes', 'notes/by-tool.txt', 'by-shell.txt']) {
    const st = await stat(join(dir, file))
    assert.deepEqual([st.uid, st.gid], [owner?.uid, owner?.gid], file)
  }
})

/**
 * Each line: what a namespace or keyring syscall answered in the sandbox. clone() returns 0 in
 * a child it made, which leaves at once.
 */
const SYSCALL_PROBE = `python3 -c '
import ctypes, os, platform
NR = {"x86_64": {"clone": 56, "add_key": 248, "keyctl": 250}, "aarch64": {"clone": 220, "add_key": 217, "keyctl": 219}}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
def call(name, *args):
    r = libc.syscall(NR[name.split("(")[0]], *args)
    if r == 0 and name.startswith("clone"):
        os._exit(0)
    print(name, "made" if r >= 0 else os.strerror(ctypes.get_errno()))
call("clone(CLONE_NEWUSER)", 0x10000000 | 17, 0, 0, 0, 0)
call("clone(CLONE_NEWNET)", 0x40000000 | 17, 0, 0, 0, 0)
call("add_key", b"user", b"tollgate", b"secret", 6, -3)
call("keyctl", 0, -3, 0, 0, 0)
'`
const UNSHARE_PROBE = 'for a in -Ur -U -n -m; do unshare $a true 2>&1; echo "unshare $a: rc=$?"; done'

function assertRefused (results: string[]): void {
  const [unshare, syscalls] = results
  assert.equal(unshare, ['-Ur', '-U', '-n', '-m'].map((a) => `unshare: unshare failed: Operation not permitted\nunshare ${a}: rc=1\n`).join(''))
  assert.equal(syscalls, [
    'clone(CLONE_NEWUSER) Operation not permitted',
    'clone(CLONE_NEWNET) Operation not permitted',
    'add_key Operation not permitted',
    'keyctl Operation not permitted',
    ''
  ].join('\n'))
}

test('in a root gateway\'s sandbox, new namespaces and the kernel keyrings are refused', async (t) => {
  if (!rootSandbox(t)) return
  const g = await gateway(t)
  g.provider.enqueue({ toolCalls: shellCalls([UNSHARE_PROBE, SYSCALL_PROBE, 'echo hi | cat']) }, { text: 'done' })
  const done = await g.http('POST', '/v1/turns?wait=true', { message: 'escape' }, await as('acme'))
  assert.equal(done.body.status, 'completed', JSON.stringify(done.body))
  const results = toolResults(g.provider.requests.at(-1))
  assertRefused(results)
  // Forks and pipes (clone without namespace flags) still work.
  assert.equal(results[2], 'hi\n')
})

test('in an unprivileged gateway\'s sandbox, new namespaces and the kernel keyrings are refused too', {
  skip: !ROOT ? 'the suite does not run as root, so it cannot start a gateway as another user (the test above covers this one)' : false
}, async (t) => {
  if (!HERE.shell) {
    t.skip(`bubblewrap cannot create its sandbox on this machine (${HERE.shellRefusal}): NOT TESTED here`)
    return
  }
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const user = { uid: 65534, gid: 65534 }
  const base = await mkdtemp(join(tmpdir(), 'tollgate-unprivileged-'))
  defer(async () => { await rm(base, { recursive: true, force: true }) })
  await chmod(base, 0o755)
  const root = join(base, 'workspace')
  const data = join(base, 'data')
  for (const dir of [root, data]) {
    await mkdir(dir)
    await chown(dir, user.uid, user.gid)
  }
  const overrides = clusterOverrides({ provider }, root, deepMerge(UNPROMPTED, { store: { kind: 'sqlite', sqlite: { path: join(data, 'tollgate.db') } } }))
  const g = await spawnGateway(defer, overrides, { user })
  const offered = (await g.http('GET', '/v1/tools')).body.tools.map((tool: { name: string }) => tool.name)
  if (!offered.includes('shell')) {
    t.skip('unprivileged user namespaces are not available here: the unprivileged gateway refused shell (checked)')
    return
  }
  provider.enqueue({ toolCalls: shellCalls([UNSHARE_PROBE, SYSCALL_PROBE, 'id -u']) }, { text: 'done' })
  const done = await g.http('POST', '/v1/turns?wait=true', { message: 'escape' })
  assert.equal(done.body.status, 'completed', JSON.stringify(done.body))
  const results = toolResults(provider.requests.at(-1))
  assertRefused(results)
  assert.equal(results[2], '65534\n')
})

test('a command whose memory goes over its cgroup\'s limit is killed, and its result says so', async (t) => {
  if (!withCgroups(t)) return
  const limit = 67_108_864
  const g = await gateway(t, { tools: { shell: { cgroups: { command: { memory_bytes: limit } } } } })
  // Well under the per-process address-space limit (2 GiB): only the cgroup can stop it.
  g.provider.enqueue({ toolCalls: shellCalls(['python3 -c \'b = bytearray(256 << 20)\'']) }, { text: 'done' })
  const done = await g.http('POST', '/v1/turns?wait=true', { message: 'allocate' }, await as('acme'))
  assert.equal(done.body.status, 'completed', JSON.stringify(done.body))
  const [result] = toolResults(g.provider.requests.at(-1))
  assert.equal(result, 'Error: exit code 137; memory limit reached: the kernel killed 1 process(es) of this command ' +
    `(at most ${limit} bytes per command, 4294967296 for all of the tenant's commands)`)
})

test('a command\'s processes together get no more CPU time than its cgroup\'s share', async (t) => {
  if (!withCgroups(t)) return
  const g = await gateway(t, { tools: { shell: { cgroups: { command: { cpus: 0.1 } } } } })
  // Two spinning processes for 2 s of wall time; `times` then reports the CPU time its children used.
  const spin = 'timeout 2 sh -c \'while :; do :; done\' & timeout 2 sh -c \'while :; do :; done\'; wait; times | tail -n 1'
  g.provider.enqueue({ toolCalls: shellCalls([spin]) }, { text: 'done' })
  const done = await g.http('POST', '/v1/turns?wait=true', { message: 'spin' }, await as('acme'))
  assert.equal(done.body.status, 'completed', JSON.stringify(done.body))
  const [result] = toolResults(g.provider.requests.at(-1))
  const match = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s\n$/.exec(result ?? '')
  assert.ok(match !== null, `times said ${JSON.stringify(result)}`)
  const cpu = Number(match[1]) * 60 + Number(match[2]) + Number(match[3]) * 60 + Number(match[4])
  // 0.1 CPU for 2 s is 0.2 s; unbounded, two spinners on a free machine would use up to 4 s.
  assert.ok(cpu < 0.6, `the command used ${cpu} s of CPU`)
})
