/**
 * The file tools of a root gateway under attack from the tenant's own sandboxed shell: a command
 * swaps a folder of the workspace for a symlink to a root-only folder outside it, as fast as it
 * can, while another turn of the tenant reads and writes through that folder. And what the file
 * tools create there is created by the sandbox user, not chowned after root made it.
 * docs/decisions/0180, 0181.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { deepMerge } from '../../src/core/config.js'
import { LOCAL_PRINCIPAL } from '../../src/auth/principal.js'
import { workspaceSlug } from '../../src/tools/builtin/workspace-layout.js'
import { clusterOverrides, scratchWorkspace, spawnGateway } from '../helpers/cluster.js'
import { startFakeProvider, type ScriptedCall } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { processesWith, untilNoProcessWith } from '../helpers/processes.js'
import { deferrer } from '../helpers/services.js'
import { finishedTurn, startTurn } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

/** The uid a root gateway gives the `local` tenant (auth "none"): its workspace's owner and its file worker's user. */
function sandboxUid (g: TestGateway): number {
  const owner = g.gateway.workspaces.ownerFor(LOCAL_PRINCIPAL.tenant)
  assert.ok(owner !== null && owner.uid === owner.gid)
  return owner.uid
}

// Commands and file calls run without a prompt; identical reads are the attack, not a loop.
const OVERRIDES = {
  agents: { default: { tools: ['shell', 'file_read', 'file_write'] } },
  risk_profiles: { default: { level: 'full' } },
  runtime_profiles: { default: { max_tool_iterations: 20, dedup_enabled: false, loop_detection: { enabled: false } } },
  tools: { shell: { require_approval_for_medium_risk: false } }
}

/** A root gateway whose sandbox works, or the reason this test cannot run here. */
async function rootGateway (t: TestContext): Promise<TestGateway | null> {
  if (process.getuid?.() !== 0) {
    t.skip('only a root gateway hands its workspaces to another uid: NOT TESTED here')
    return null
  }
  const g = await startGateway({ overrides: OVERRIDES })
  t.after(() => g.close())
  if (!g.gateway.turns.catalog.has('shell')) {
    t.skip('bubblewrap cannot create its sandbox on this machine: NOT TESTED here')
    return null
  }
  return g
}

function toolMessages (g: TestGateway, userMessage: string): string[] {
  const request = g.provider.requests.filter((r) => r.body.messages.some((m) => m.role === 'user' && m.content === userMessage)).at(-1)
  return (request?.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => m.content ?? '')
}

test('a shell turn swapping a folder for a symlink to a root-only folder cannot lead 300 writes and 150 reads of another turn outside the workspace', async (t) => {
  const g = await rootGateway(t)
  if (g === null) return
  assert.ok(existsSync('/usr/bin/perl'), 'the attack loop is a perl one-liner (perl-base)')
  const outside = await mkdtemp(join(tmpdir(), 'tollgate-outside-'))
  t.after(async () => { await rm(outside, { recursive: true, force: true }) })
  const marker = 'ROOT-ONLY-MARKER-c41d'
  await writeFile(join(outside, 'secret.txt'), marker)
  const before = await stat(join(outside, 'secret.txt'))
  assert.equal((await stat(outside)).mode & 0o777, 0o700)

  // Turn A: as fast as perl can, `sub` is a folder, nothing, a symlink to `outside`, nothing, …
  // (a folder the gateway made meanwhile is moved aside, so the loop never sticks).
  const swap = `perl -e 'mkdir "d"; symlink "${outside}", "l"; my $n = 0; until (-e "stop") { ` +
    'rename("d", "sub") or (rename("sub", "aside" . $n++) and rename("d", "sub")); ' +
    'rename "sub", "d"; rename "l", "sub"; rename "sub", "l" }\''

  g.provider.enqueue({ toolCalls: [{ id: 'swap', name: 'shell', arguments: { command: swap } }] })
  const attacker = await startTurn(g, { message: 'swap', session_id: 'ses_swap' })
  await eventually(async () => (await readdir(g.workspace)).includes('d') || (await readdir(g.workspace)).includes('sub'), { what: 'the swap loop to start', timeoutMs: 15_000 })

  // Turn B: 450 file calls on `sub/…`, 50 to a model response.
  const calls: ScriptedCall[] = Array.from({ length: 450 }, (_, i) => i % 3 === 2
    ? { id: `r${i}`, name: 'file_read', arguments: { path: 'sub/secret.txt' } }
    : { id: `w${i}`, name: 'file_write', arguments: { path: `sub/w${i}.txt`, content: `write ${i}`, create_dirs: i % 2 === 0 } })
  for (let i = 0; i < calls.length; i += 50) g.provider.enqueue({ toolCalls: calls.slice(i, i + 50) })
  g.provider.enqueue({ text: 'wrote' })
  const victim = await startTurn(g, { message: 'write', session_id: 'ses_files' })
  assert.equal((await finishedTurn(g, victim.turn_id, 50_000)).status, 'completed')

  g.provider.enqueue({ text: 'stopped' })
  await writeFile(join(g.workspace, 'stop'), '')
  assert.equal((await finishedTurn(g, attacker.turn_id, 15_000)).status, 'completed')

  const results = toolMessages(g, 'write')
  assert.equal(results.length, 450)
  assert.equal(results.some((r) => r.includes(marker)), false, 'a read returned the outside file')
  assert.deepEqual(await readdir(outside), ['secret.txt'])
  const after = await stat(join(outside, 'secret.txt'))
  assert.deepEqual([after.ino, after.mtimeMs, after.size], [before.ino, before.mtimeMs, before.size])
  // The race did happen: calls met the symlink (refused) and the folder (done).
  const writes = results.filter((_, i) => i % 3 !== 2)
  assert.ok(writes.some((r) => /^Error: path resolves outside the workspace: sub\/w\d+\.txt$/.test(r)), 'no write met the symlink')
  assert.ok(writes.some((r) => /^Wrote \d+ bytes to /.test(r)), 'no write met the folder')
})

test('what the file tools create in a root gateway\'s workspace the sandbox user creates, so a folder it may not write refuses them', async (t) => {
  const g = await rootGateway(t)
  if (g === null) return
  const dir = g.workspace
  await mkdir(join(dir, 'locked'), { mode: 0o755 })
  await writeFile(join(dir, 'root-only.txt'), 'root', { mode: 0o600 })
  g.provider.enqueue({
    toolCalls: [
      { id: 'w1', name: 'file_write', arguments: { path: 'made/deeper/f.txt', content: 'one\n' } },
      { id: 'w2', name: 'file_write', arguments: { path: 'made/deeper/f.txt', content: 'two\n', append: true } },
      { id: 'w3', name: 'file_write', arguments: { path: 'replaced.txt', content: 'first' } },
      { id: 'w4', name: 'file_write', arguments: { path: 'replaced.txt', content: 'second' } },
      { id: 'w5', name: 'file_write', arguments: { path: 'locked/x.txt', content: 'x' } },
      { id: 'r1', name: 'file_read', arguments: { path: 'root-only.txt' } }
    ]
  }, { text: 'done' })
  const { turn_id: turnId } = await startTurn(g, { message: 'make' })
  assert.equal((await finishedTurn(g, turnId)).status, 'completed')
  assert.deepEqual(toolMessages(g, 'make'), [
    `Wrote 4 bytes to ${join('made', 'deeper', 'f.txt')}`,
    `Wrote 4 bytes to ${join('made', 'deeper', 'f.txt')}`,
    'Wrote 5 bytes to replaced.txt',
    'Wrote 6 bytes to replaced.txt',
    'Error: permission denied',
    'Error: permission denied'
  ])
  assert.equal(await readFile(join(dir, 'made', 'deeper', 'f.txt'), 'utf8'), 'one\ntwo\n')
  assert.deepEqual((await readdir(join(dir, 'locked'))), [])
  // Everything in the workspace but the test's own two entries: the sandbox user's, nothing root's, no temp file left.
  const entries = (await readdir(dir, { recursive: true })).filter((p) => p !== 'locked' && p !== 'root-only.txt').sort()
  assert.deepEqual(entries, ['made', join('made', 'deeper'), join('made', 'deeper', 'f.txt'), 'replaced.txt'])
  for (const p of [dir, ...entries.map((e) => join(dir, e))]) {
    const st = await lstat(p)
    assert.deepEqual([st.uid, st.gid], [sandboxUid(g), sandboxUid(g)], relative(dir, p))
  }
})

test('a root gateway\'s file worker runs as the sandbox user for good, without the gateway\'s environment, and ends when the gateway closes', async (t) => {
  const g = await rootGateway(t)
  if (g === null) return
  g.provider.enqueue({ toolCalls: [{ id: 'w', name: 'file_write', arguments: { path: 'a.txt', content: 'a' } }] }, { text: 'done' })
  const { turn_id: turnId } = await startTurn(g, { message: 'write' })
  assert.equal((await finishedTurn(g, turnId)).status, 'completed')
  const workers = await processesWith(`file-worker.ts ${g.workspaceRoot} `)
  assert.equal(workers.length, 1)
  const status = await readFile(`/proc/${workers[0] ?? 0}/status`, 'utf8')
  // Real, effective, saved and file-system ids are all the sandbox user's: root is gone for good.
  const uid = sandboxUid(g)
  assert.match(status, new RegExp(`^Uid:\\t${uid}\\t${uid}\\t${uid}\\t${uid}$`, 'm'))
  assert.match(status, /^CapEff:\t0+$/m)
  // Not dumpable (its /proc files stay root's, so no process of that uid can trace it), and none of the gateway's environment.
  assert.equal((await stat(`/proc/${workers[0] ?? 0}/mem`)).uid, 0)
  const environ = (await readFile(`/proc/${workers[0] ?? 0}/environ`, 'utf8')).split('\0').filter((v) => v !== '')
  assert.deepEqual(environ.filter((v) => !v.startsWith('NODE_CHANNEL_')), [])
  await g.close()
  await untilNoProcessWith(`file-worker.ts ${g.workspaceRoot} `)
})

test('a file worker does not outlive a gateway killed with SIGKILL', async (t) => {
  if (process.getuid?.() !== 0) {
    t.skip('only a root gateway starts file workers: NOT TESTED here')
    return
  }
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const root = await scratchWorkspace(defer)
  const child = await spawnGateway(defer, clusterOverrides({ provider }, root, deepMerge(OVERRIDES, {})))
  provider.enqueue({ toolCalls: [{ id: 'w', name: 'file_write', arguments: { path: 'a.txt', content: 'a' } }] }, { text: 'done' })
  const accepted = await child.http('POST', '/v1/turns?wait=true', { message: 'write' })
  assert.equal(accepted.body.status, 'completed', JSON.stringify(accepted.body))
  const marker = `file-worker.ts ${root} `
  if (!existsSync(join(root, workspaceSlug('local'), 'a.txt')) || (await processesWith(marker)).length === 0) {
    t.skip('this gateway runs its file tools in-process (no working sandbox here): NOT TESTED here')
    return
  }
  await child.kill()
  await untilNoProcessWith(marker)
})
