/**
 * What a finished turn leaves in the gateway's heap. On a store that keeps the event log, the
 * store answers a finished turn's replays, so the process forgets its in-memory copy of the
 * events at the turn's end; the retention entry that drops the rest later holds the turn's id,
 * never its record.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { EventEnvelope } from '../../schemas/events.js'
import { MemoryEventBus } from '../../src/bus/memory.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { startProbeGateway } from '../helpers/tools.js'
import { eventually } from '../helpers/eventually.js'

interface Wiring { store: SqliteStore, bus: MemoryEventBus, path: string }

/** The default wiring with its in-process bus in the test's hands (the gateway builds the stored journal over it). */
async function sqliteWiring (t: { after: (fn: () => Promise<void>) => void }): Promise<Wiring> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-finished-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const path = join(dir, 'tollgate.db')
  const store = new SqliteStore({ path, instanceId: 'inst-a' })
  const bus = new MemoryEventBus({ maxEventsPerTurn: 1000, onListenerError: (err) => { throw err } })
  return { store, bus, path }
}

const kinds = (events: EventEnvelope[]): string[] => events.map((e) => `${e.seq} ${e.event.kind}`)

test('on SQLite a finished turn\'s events leave the process at its end, and every replay of it still comes back whole from the store', async (t) => {
  const { store, bus, path } = await sqliteWiring(t)
  const { g } = await startProbeGateway(t, { store: { kind: 'sqlite', sqlite: { path } }, cluster: { lease_ms: 600_000 } }, { store, bus })
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'one' } }] }, { text: 'done' })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  const live = await ws.waitForTerminal(turnId)
  assert.equal(live.at(-1)?.event.kind, 'turn.completed')

  assert.deepEqual(await bus.replay(turnId, 0), { kind: 'unknown' }, 'the in-process copy is gone')
  const retention = (g.gateway.turns as unknown as { retention: { size: number } }).retention
  assert.equal(retention.size, 0, 'nothing is left for the retention sweep to forget')
  const stored = (await g.http('GET', `/v1/turns/${turnId}/events`)).body.events as EventEnvelope[]
  assert.deepEqual(kinds(stored), kinds(live))
  const late = await g.socket()
  await late.request({ type: 'subscribe', turn_id: turnId, after_seq: 2 })
  assert.deepEqual(kinds(await late.waitForTerminal(turnId)), kinds(live.slice(2)))
})

test('on the memory store, which keeps no event log, a finished turn\'s events stay in the process for its retention', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ text: 'done' })
  const done = await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  assert.equal(done.body.status, 'completed')
  const replay = await g.gateway.bus.replay(done.body.turn_id as string, 0)
  assert.equal(replay.kind, 'events')
  assert.equal(replay.kind === 'events' ? replay.events.at(-1)?.event.kind : null, 'turn.completed')
})

test('a finished turn\'s record is not kept alive by its retention entry', async (t) => {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'slow', ms: 200 } }] }, { text: 'done' })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  await ws.waitForEvent(turnId, (e) => e.kind === 'tool_call')
  // The running turn's own record object, reached the only way a test can: while it runs.
  const active = (g.gateway.turns as unknown as { active: Map<string, { record: object }> }).active
  const record = new WeakRef(active.get(turnId)?.record ?? {})
  assert.notEqual(record.deref(), undefined)
  await ws.waitForTerminal(turnId)
  // The turn's closing callbacks settle a moment after its terminal event: collect until the
  // record is gone; only a leak keeps it past the wait.
  await eventually(async () => {
    gc()
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    return record.deref() === undefined
  }, { what: 'the finished turn\'s record to be collected', timeoutMs: 5000 })
  assert.equal(record.deref(), undefined, 'the finished turn\'s record is still reachable')
  // Still answered: from the store (the memory store keeps the record's JSON).
  assert.equal((await g.http('GET', `/v1/turns/${turnId}`)).body.status, 'completed')
})
