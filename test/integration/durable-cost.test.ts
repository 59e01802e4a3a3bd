/**
 * What durable turns cost on SQLite: their checkpoints ride in the transactions of the event
 * groups they follow; a round's is written before its tools run, at most one extra commit per
 * round (it joins whatever else its tick writes, so timing may fold it into another group).
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqlCounter, type SqlCounts } from '../../src/store/sql-probe.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { startProbeGateway } from '../helpers/tools.js'

/** The SQL work of one turn with two rounds of tool calls, under `running_turns`. */
async function turnCost (t: TestContext, runningTurns: 'resume' | 'cancel'): Promise<SqlCounts & { checkpoints: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-durable-cost-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const path = join(dir, 'tollgate.db')
  const counter = new SqlCounter()
  const store = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0, probe: counter })
  // No lease renewal and no schedule polling inside the turn: their statements would count with its own.
  const { g } = await startProbeGateway(t, {
    store: { kind: 'sqlite', sqlite: { path } }, cluster: { lease_ms: 600_000 }, schedules: { enabled: false }, shutdown: { running_turns: runningTurns }
  }, { store })
  g.provider.enqueue(
    { toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'a' } }] },
    { toolCalls: [{ id: 'b', name: 'probe', arguments: { label: 'b' } }] },
    { text: 'done' }
  )
  const before = counter.snapshot()
  const done = await g.http('POST', '/v1/turns?wait=true', { message: 'run both', interactive: false })
  assert.equal(done.body.status, 'completed')
  const after = counter.snapshot()
  return {
    statements: after.statements - before.statements,
    commits: after.commits - before.commits,
    checkpoints: (after.inserts.tollgate_checkpoints ?? 0) - (before.inserts.tollgate_checkpoints ?? 0),
    inserts: after.inserts
  }
}

test('a durable turn\'s checkpoints cost at most one extra commit per round of tool calls, and no other write', async (t) => {
  const durable = await turnCost(t, 'resume')
  const plain = await turnCost(t, 'cancel')
  t.diagnostic(`resume: ${durable.commits} commits, ${durable.statements} statements; cancel: ${plain.commits} commits, ${plain.statements} statements`)
  // Three model calls and two prepared rounds: five checkpoints. Those of the model calls ride in
  // the transactions of their events (the first in the turn's creation); a round's is stored before its tools run, at the end of its
  // tick: a commit of its own unless something else of that tick is written with it.
  assert.equal(plain.checkpoints, 0)
  assert.equal(durable.checkpoints, 5)
  assert.ok(durable.commits <= plain.commits + 2, `${durable.commits} commits against ${plain.commits} without checkpoints`)
  // Every commit is one BEGIN … COMMIT: what remains is the writes, the same but for the checkpoints.
  const writes = (c: SqlCounts): number => c.statements - 2 * c.commits
  assert.equal(writes(durable), writes(plain) + durable.checkpoints)
})
