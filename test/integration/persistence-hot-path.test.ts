import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import type { BusEnvelope } from '../../src/bus/bus.js'
import { MemoryEventBus } from '../../src/bus/memory.js'
import { BusJournal } from '../../src/journal/bus-journal.js'
import type { TurnJournal } from '../../src/journal/journal.js'
import { StoredJournal } from '../../src/journal/stored-journal.js'
import { SqlCounter } from '../../src/store/sql-probe.js'
import { SqliteStore, type SqliteStoreOptions } from '../../src/store/sqlite.js'
import type { TurnRecord } from '../../src/store/store.js'
import { defineTool, ok, type Tool } from '../../src/tools/contract.js'
import { startGateway } from '../helpers/gateway.js'
import { deferrer, type Defer } from '../helpers/services.js'

async function scratchDb (defer: Defer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-hot-path-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  return join(dir, 'tollgate.db')
}

async function openStore (defer: Defer, options: Omit<SqliteStoreOptions, 'path' | 'instanceId'> = {}): Promise<{ store: SqliteStore, counter: SqlCounter }> {
  const counter = new SqlCounter()
  const store = new SqliteStore({ path: await scratchDb(defer), instanceId: 'inst-a', checkpointMs: 0, probe: counter, ...options })
  defer(async () => { await store.close() })
  return { store, counter }
}

/** A stored journal over the memory bus: events are published on `bus` once `journal` stored them. */
function storedJournal (defer: Defer, store: SqliteStore, deltaWindowMs?: number): { journal: StoredJournal, bus: MemoryEventBus } {
  const bus = new MemoryEventBus({ maxEventsPerTurn: 1000, onListenerError: (err) => { throw err } })
  const journal = new StoredJournal({
    bus, store, log: pino({ level: 'silent' }), maxEventsPerTurn: 1000, maxBuffered: 1000, ...(deltaWindowMs === undefined ? {} : { deltaWindowMs })
  })
  defer(async () => { await journal.close() })
  return { journal, bus }
}

/** An event that is not streamed text: written at the end of its tick (deltas gather for DELTA_WINDOW_MS, see below). */
function envelope (seq: number, doc = `piece ${seq}`): BusEnvelope {
  return { turn_id: 'turn_1', session_id: 'ses_1', tenant: 'local', seq, ts: new Date().toISOString(), event: { kind: 'user.message', message: doc, n: seq } }
}

function delta (seq: number, turnId = 'turn_1'): BusEnvelope {
  return { turn_id: turnId, session_id: 'ses_1', tenant: 'local', seq, ts: new Date().toISOString(), event: { kind: 'text.delta', text: ` piece${seq}` } }
}

/** One turn of the event loop: callbacks queued with setImmediate before this one have run. */
async function nextTick (): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve))
}

test('events appended in one tick are written in one transaction at its end, before any subscriber sees them', async (t) => {
  const defer = deferrer(t)
  const { store, counter } = await openStore(defer)
  const { journal, bus } = storedJournal(defer, store)
  const before = counter.snapshot()
  const seen: Array<{ seq: number, commits: number, statements: number }> = []
  const storedAtFirst: Array<Promise<BusEnvelope[]>> = []
  bus.subscribeTurn('turn_1', (e) => {
    const now = counter.snapshot()
    seen.push({ seq: e.seq, commits: now.commits - before.commits, statements: now.statements - before.statements })
    if (storedAtFirst.length === 0) storedAtFirst.push(store.readEvents('turn_1', 0, 10))
  })
  journal.append(envelope(1))
  journal.append(envelope(2))
  // A promise reaction of the same tick (a tool that answers at once) still joins the group.
  await Promise.resolve()
  journal.append(envelope(3))
  await Promise.resolve()
  assert.equal(seen.length, 0, 'fan-out waits for the end of the tick and the group\'s write')
  await nextTick()
  // BEGIN, three INSERTs, COMMIT; then the one SELECT made at the first delivery. (Streamed text
  // would be one row: a run of consecutive deltas, see delta-storage.test.ts.)
  assert.deepEqual(seen.map((s) => [s.seq, s.commits, s.statements]), [[1, 1, 5], [2, 1, 6], [3, 1, 6]])
  assert.deepEqual((await storedAtFirst[0])?.map((e) => e.seq), [1, 2, 3])
})

test('streamed text of several ticks gathers into one transaction, and any other event writes it at the end of its own tick', async (t) => {
  const defer = deferrer(t)
  const { store, counter } = await openStore(defer)
  // A window wide enough that the ticks below fall inside it on a loaded machine (the default is 2 ms).
  const { journal, bus } = storedJournal(defer, store, 500)
  const before = counter.snapshot()
  const seen: Array<{ seq: number, commits: number }> = []
  let reached: { count: number, resolve: () => void } | null = null
  const deliveries = async (count: number): Promise<void> => {
    if (seen.length >= count) return
    await new Promise<void>((resolve) => { reached = { count, resolve } })
  }
  bus.subscribeTurn('turn_1', (e) => {
    seen.push({ seq: e.seq, commits: counter.snapshot().commits - before.commits })
    if (reached !== null && seen.length >= reached.count) reached.resolve()
  })
  // Two streams' tokens arriving in separate I/O callbacks, as a real provider's do.
  journal.append(delta(1))
  await nextTick()
  journal.append(delta(1, 'turn_2'))
  await nextTick()
  journal.append(delta(2))
  await deliveries(2)
  assert.deepEqual(seen, [{ seq: 1, commits: 1 }, { seq: 2, commits: 1 }], 'three deltas of three ticks, one commit')
  // Another kind of event does not wait for the window: written at the end of its tick, with the delta before it.
  journal.append(delta(3))
  journal.append(envelope(4))
  await nextTick()
  assert.deepEqual(seen.slice(2), [{ seq: 3, commits: 2 }, { seq: 4, commits: 2 }])
})

test('an event appended as stored goes out at once, after the waiting events of its turn, and the journal writes none of them', async (t) => {
  const defer = deferrer(t)
  const { store, counter } = await openStore(defer)
  const { journal, bus } = storedJournal(defer, store)
  const seen: number[] = []
  bus.subscribeTurn('turn_1', (e) => { seen.push(e.seq) })
  bus.subscribeTurn('turn_2', (e) => { seen.push(100 + e.seq) })
  journal.append(envelope(1))
  journal.append({ ...envelope(1), turn_id: 'turn_2' })
  journal.append(envelope(2))
  const unwritten = journal.unwritten('turn_1')
  assert.deepEqual(unwritten?.map((e) => e.seq), [1, 2])
  // The caller's own transaction (as a turn's final save does): the waiting events and the new one.
  const closing = envelope(3)
  store.appendEventsNow([...(unwritten ?? []), closing])
  const before = counter.snapshot()
  journal.appendStored(closing)
  assert.deepEqual(seen, [1, 2, 3], 'the stored event and its turn\'s earlier ones, at once and in order')
  assert.deepEqual(journal.unwritten('turn_1'), [])
  await nextTick()
  assert.deepEqual(seen, [1, 2, 3, 101], 'the other turn\'s event went out with the end of the tick')
  const after = counter.snapshot()
  assert.deepEqual([after.commits - before.commits, (after.inserts.tollgate_events ?? 0) - (before.inserts.tollgate_events ?? 0)], [1, 1],
    'only the other turn\'s event was written by the journal')
  assert.deepEqual((await store.readEvents('turn_1', 0, 10)).map((e) => e.seq), [1, 2, 3])
})

test('a journal without an event log in the store has nothing unwritten to offer', () => {
  const bus = new MemoryEventBus({ maxEventsPerTurn: 10, onListenerError: (err) => { throw err } })
  const journal: TurnJournal = new BusJournal(bus, { saveTurn: async () => {} })
  journal.append(envelope(1))
  assert.equal(journal.unwritten('turn_1'), null)
})

test('with a store that writes asynchronously (as PostgreSQL), a promise reaction queued after an append runs after the event was fanned out', async (t) => {
  const defer = deferrer(t)
  const { store } = await openStore(defer)
  // The SQLite store minus its synchronous append: what the journal sees of an asynchronous store.
  const asynchronous = new Proxy(store, {
    get (target, key) {
      const value: unknown = key === 'appendEventsNow' ? undefined : Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
  const bus = new MemoryEventBus({ maxEventsPerTurn: 1000, onListenerError: (err) => { throw err } })
  const journal = new StoredJournal({ bus, store: asynchronous, log: pino({ level: 'silent' }), maxEventsPerTurn: 1000, maxBuffered: 1000 })
  defer(async () => { await journal.close() })
  const seen: number[] = []
  bus.subscribeTurn('turn_1', (e) => { seen.push(e.seq) })
  journal.append(envelope(1))
  assert.deepEqual(seen, [])
  await Promise.resolve()
  assert.deepEqual(seen, [1])
  await journal.close()
  assert.deepEqual((await store.readEvents('turn_1', 0, 10)).map((e) => e.seq), [1])
})

test('a replay asked right after an append includes the events whose group was not flushed yet', async (t) => {
  const defer = deferrer(t)
  const { store } = await openStore(defer)
  const { journal } = storedJournal(defer, store)
  journal.append(envelope(1))
  journal.append(envelope(2))
  const replay = await journal.replay('turn_1', 0)
  assert.equal(replay.kind, 'events')
  assert.deepEqual(replay.kind === 'events' && replay.events.map((e) => e.seq), [1, 2])
})

test('a group whose write fails is still fanned out at once, and reaches the log in order, without duplicates, once the store answers again', async (t) => {
  const defer = deferrer(t)
  const { store } = await openStore(defer)
  let failures = 2
  const flaky = new Proxy(store, {
    get (target, key, receiver) {
      if (key !== 'appendEventsNow' && key !== 'appendEvents') return Reflect.get(target, key, receiver)
      return (events: readonly BusEnvelope[]) => {
        if (failures > 0) {
          failures--
          if (key === 'appendEvents') return Promise.reject(new Error('store unreachable'))
          throw new Error('store unreachable')
        }
        return key === 'appendEvents' ? target.appendEvents(events) : target.appendEventsNow(events)
      }
    }
  })
  const bus = new MemoryEventBus({ maxEventsPerTurn: 1000, onListenerError: (err) => { throw err } })
  const journal = new StoredJournal({ bus, store: flaky, log: pino({ level: 'silent' }), maxEventsPerTurn: 1000, maxBuffered: 1000 })
  const seen: number[] = []
  bus.subscribeTurn('turn_1', (e) => { seen.push(e.seq) })
  journal.append(envelope(1))
  journal.append(envelope(2))
  await nextTick()
  journal.append(envelope(3))
  // Earlier events of the turn wait for their retry: a caller must not write later ones first.
  assert.equal(journal.unwritten('turn_1'), null)
  await nextTick()
  assert.deepEqual(seen, [1, 2, 3])
  assert.deepEqual(await store.readEvents('turn_1', 0, 10), [])
  // Closing wakes the writer's retry at once instead of after its back-off.
  await journal.close()
  assert.equal(failures, 0)
  assert.deepEqual((await store.readEvents('turn_1', 0, 10)).map((e) => e.seq), [1, 2, 3])
})

/** A running turn's record as it stands after `lastSeq` events. */
function runningRecord (lastSeq: number): TurnRecord {
  const at = new Date().toISOString()
  return {
    turn_id: 'turn_1', session_id: 'ses_1', agent: 'default', owner: 'local/local', status: 'running', created_at: at, updated_at: at,
    iterations: 1, tool_calls: [], approvals: [], pending_approvals: [], last_seq: lastSeq
  }
}

test('a running turn\'s record saved through the journal is written in its tick\'s group, one transaction with the events before it', async (t) => {
  const defer = deferrer(t)
  const { store, counter } = await openStore(defer)
  const { journal } = storedJournal(defer, store)
  const before = counter.snapshot()
  const record = runningRecord(2)
  journal.append(envelope(1))
  journal.append(envelope(2))
  const saved = journal.saveTurn(record)
  // Saved as it stands at the end of the tick, with whatever was published meanwhile.
  journal.append(envelope(3))
  record.last_seq = 3
  assert.equal(await store.getTurn('turn_1'), null, 'nothing is written before the end of the tick')
  await saved
  const after = counter.snapshot()
  assert.equal(after.commits - before.commits, 1)
  assert.equal((await store.getTurn('turn_1'))?.last_seq, 3)
  assert.deepEqual((await store.readEvents('turn_1', 0, 10)).map((e) => e.seq), [1, 2, 3])
})

test('with a store that writes asynchronously (as PostgreSQL), a record saved through the journal is saved after the events before it, as it stood', async (t) => {
  const defer = deferrer(t)
  const { store } = await openStore(defer)
  const writes: string[] = []
  const asynchronous = new Proxy(store, {
    get (target, key) {
      if (key === 'appendEventsNow') return undefined
      if (key === 'appendEvents') {
        return async (events: readonly BusEnvelope[]) => {
          writes.push(`events ${events.map((e) => e.seq).join()}`)
          await target.appendEvents(events)
        }
      }
      if (key === 'saveTurn') {
        return async (turn: TurnRecord) => {
          writes.push(`record ${turn.last_seq}`)
          await target.saveTurn(turn)
        }
      }
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
  const bus = new MemoryEventBus({ maxEventsPerTurn: 1000, onListenerError: (err) => { throw err } })
  const journal = new StoredJournal({ bus, store: asynchronous, log: pino({ level: 'silent' }), maxEventsPerTurn: 1000, maxBuffered: 1000 })
  defer(async () => { await journal.close() })
  const record = runningRecord(2)
  journal.append(envelope(1))
  journal.append(envelope(2))
  const saved = journal.saveTurn(record)
  record.last_seq = 3
  journal.append(envelope(3))
  await saved
  assert.equal(writes[0], 'events 1,2')
  assert.ok(writes.includes('record 2'), JSON.stringify(writes))
  assert.equal((await store.getTurn('turn_1'))?.last_seq, 2)
})

test('a record whose group the store refused is saved once the group\'s events, retried, are stored', async (t) => {
  const defer = deferrer(t)
  const { store } = await openStore(defer)
  let failures = 1
  const flaky = new Proxy(store, {
    get (target, key) {
      if (key === 'appendEventsNow' && failures > 0) {
        return () => {
          failures--
          throw new Error('disk I/O error')
        }
      }
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
  const bus = new MemoryEventBus({ maxEventsPerTurn: 1000, onListenerError: (err) => { throw err } })
  const journal = new StoredJournal({ bus, store: flaky, log: pino({ level: 'silent' }), maxEventsPerTurn: 1000, maxBuffered: 1000 })
  defer(async () => { await journal.close() })
  journal.append(envelope(1))
  await journal.saveTurn(runningRecord(1))
  assert.equal(failures, 0)
  assert.deepEqual((await store.readEvents('turn_1', 0, 10)).map((e) => e.seq), [1])
  assert.equal((await store.getTurn('turn_1'))?.last_seq, 1)
})

test('sqlite: appends never checkpoint the WAL, which keeps every frame until a checkpoint copies them all', async (t) => {
  const { store } = await openStore(deferrer(t))
  // 3000 commits of one page or more each: SQLite's default would have checkpointed every 1000 pages.
  const doc = 'x'.repeat(2000)
  for (let seq = 1; seq <= 3000; seq++) store.appendEventsNow([envelope(seq, doc)])
  const result = store.checkpoint()
  assert.ok(result.walFrames >= 3000, `the WAL held ${result.walFrames} frames`)
  assert.equal(result.checkpointed, result.walFrames)
  store.appendEventsNow([envelope(3001)])
  // Started over, it holds only the pages of that one commit: a few, up to 10 or so when the row
  // splits a leaf of the table and of its index; not started over, it would hold thousands.
  const after = store.checkpoint().walFrames
  assert.ok(after < 32, `after a complete checkpoint the WAL starts over (it holds ${after} frames)`)
})

test('sqlite: under writes that never pause, the worker\'s copies and the catch-up once the WAL is large keep restarting the WAL', async (t) => {
  const counter = new SqlCounter()
  const errors: unknown[] = []
  const store = new SqliteStore({ path: await scratchDb(deferrer(t)), instanceId: 'inst-a', checkpointMs: 20, catchUpFrames: 64, probe: counter, onCheckpointError: (err) => { errors.push(err) } })
  t.after(async () => { await store.close() })
  // Each checkpoint's outcome, with the commits made by the time it reported.
  const results: Array<{ walFrames: number, checkpointed: number, commits: number }> = []
  let seq = 0
  const watching = (async () => {
    for (;;) {
      const result = await counter.waitForCheckpoint()
      results.push({ ...result, commits: seq })
      if (results.length >= 40) return
    }
  })()
  // One commit of a few pages per turn of the event loop, until 40 checkpoints have reported.
  const doc = 'x'.repeat(6000)
  const writing = (async () => {
    while (results.length < 40) {
      store.appendEventsNow([envelope(++seq, doc)])
      await new Promise((resolve) => setImmediate(resolve))
    }
  })()
  await Promise.all([watching, writing])
  assert.deepEqual(errors, [])
  // The WAL restarted again and again instead of holding every write since the start. (Not "fewer
  // frames than commits": a commit is several frames, and on a loaded machine the worker's first
  // copy can come after a large share of the run's commits, when the WAL still holds them all.)
  const restarts = results.filter((r, i) => i > 0 && r.walFrames < (results[i - 1] as { walFrames: number }).walFrames).length
  const trace = results.map((r) => `${r.commits}:${r.walFrames}/${r.checkpointed}`).join(' ')
  assert.ok(restarts >= 3, `the WAL restarted ${restarts} times (commits:frames/copied ${trace})`)
  const last = results[results.length - 1] as { walFrames: number, commits: number }
  const first = results[0] as { walFrames: number, commits: number }
  // The frames per commit seen at the first copy, which held every write so far: the WAL at the end
  // holds far fewer than every write of the run would be.
  assert.ok(last.walFrames < (first.walFrames / first.commits) * last.commits / 2, `the WAL ends with ${last.walFrames} frames (${trace})`)
  assert.deepEqual((await store.readEvents('turn_1', 0, 5)).map((e) => e.seq), [1, 2, 3, 4, 5])
})

test('sqlite: the checkpoint timer copies the WAL into the database file, and no checkpoint runs after close', async (t) => {
  const counter = new SqlCounter()
  const errors: unknown[] = []
  const store = new SqliteStore({ path: await scratchDb(deferrer(t)), instanceId: 'inst-a', checkpointMs: 5, probe: counter, onCheckpointError: (err) => { errors.push(err) } })
  // The store's timer is unref'd; this one keeps the test's event loop alive while it waits.
  const guard = setTimeout(() => { assert.fail('no checkpoint within 10 s') }, 10_000)
  t.after(() => { clearTimeout(guard) })
  await store.appendEvents([envelope(1), envelope(2)])
  let result = await counter.waitForCheckpoint()
  while (result.walFrames === 0) result = await counter.waitForCheckpoint()
  assert.equal(result.checkpointed, result.walFrames)
  await store.close()
  const after = counter.snapshot().checkpoints
  // fixed wait: a negative check: no event marks "a timer did not fire"; several periods pass and nothing runs.
  await new Promise((resolve) => setTimeout(resolve, 50))
  assert.equal(counter.snapshot().checkpoints, after)
  assert.deepEqual(errors, [])
})

/** Two tools that answer at once, as the benchmark's no-op tools do. */
function instantTools (): Tool[] {
  return ['instant_a', 'instant_b'].map((name) => defineTool<{ n: number }>({
    name,
    description: `answers at once (${name})`,
    parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
    async execute (args) { return ok(`${name} ${args.n}`) }
  }))
}

test('sqlite: a turn with two tool calls that answer at once costs at most 4 commits as a durable turn, and every event is stored before anyone sees it', async (t) => {
  const defer = deferrer(t)
  const counter = new SqlCounter()
  const path = await scratchDb(defer)
  const store = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0, probe: counter })
  const g = await startGateway({
    store,
    tools: instantTools(),
    // The config names the store kind (it decides the stored journal); a long lease: no renewal lands
    // inside the turn; no schedule polling either (its reads would be counted with the turn's).
    overrides: {
      store: { kind: 'sqlite', sqlite: { path } },
      cluster: { lease_ms: 600_000 },
      schedules: { enabled: false },
      agents: { default: { tools: ['instant_a', 'instant_b'] } },
      risk_profiles: { default: { auto_approve: ['instant_a', 'instant_b'] } }
    }
  })
  defer(async () => { await g.close() })
  g.provider.enqueue(
    { toolCalls: [{ id: 'a', name: 'instant_a', arguments: { n: 1 } }, { id: 'b', name: 'instant_b', arguments: { n: 2 } }] },
    { text: 'done' }
  )
  // At each delivery, what the store already holds of the turn (SQLite reads synchronously).
  const storedAtDelivery: Array<Promise<[number, number[]]>> = []
  g.gateway.bus.subscribeSession('local', 'ses_hot', (e) => {
    storedAtDelivery.push(store.readEvents(e.turn_id, 0, 100).then((stored) => [e.seq, stored.map((s) => s.seq)]))
  })
  const before = counter.snapshot()
  const done = await g.http('POST', '/v1/turns?wait=true', { session_id: 'ses_hot', message: 'run both', interactive: false })
  assert.equal(done.body.status, 'completed')
  // The turn's audit entries (written with its events, decision 0277) are all in.
  await g.gateway.audit.settled()
  const after = counter.snapshot()
  const stored = await store.readEvents(done.body.turn_id as string, 0, 100)
  assert.deepEqual(stored.map((e) => e.event.kind), ['turn.started', 'iteration', 'tool_call', 'tool_result', 'tool_call', 'tool_result', 'iteration', 'text.delta', 'turn.completed'])
  for (const [seq, storedSeqs] of await Promise.all(storedAtDelivery)) assert.ok(storedSeqs.includes(seq), `event ${seq} was delivered before it was stored (${storedSeqs.join(',')})`)
  assert.deepEqual((await Promise.all(storedAtDelivery)).map(([seq]) => seq), [1, 2, 3, 4, 5, 6, 7, 8, 9])
  const commits = after.commits - before.commits
  const statements = after.statements - before.statements
  t.diagnostic(`${commits} commits, ${statements} statements (BEGIN and COMMIT included)`)
  // createTurn with turn.started, the first iteration and the checkpoint at the first model call;
  // the round's checkpoint, stored before its tools run (at the end of its tick, in a commit of its
  // own unless something else is written in that tick: durable-cost.test.ts); the round (both calls,
  // both results, the next iteration and its checkpoint, one tick); the final turn+session save
  // with the answer's text and turn.completed.
  assert.ok(commits <= 4, `${commits} commits`)
  // Besides a BEGIN and a COMMIT per commit: the session read; createTurn (turn, session, 2 events,
  // 1 checkpoint), the round's checkpoint, 5 events + 1 checkpoint, the final save (turn, session,
  // 2 events; a short answer in one delta is not worth compacting, so the turn is not queued for
  // it); the audit chain's two tool-execution entries, in the round's transaction (a savepoint,
  // the chain head's read, two inserts, the release); and the test's own 9 reads above.
  assert.equal(statements - 2 * commits, 1 + 5 + 1 + 6 + 4 + 5 + 9)
  const inserted = Object.fromEntries(Object.entries(after.inserts).map(([table, n]) => [table, n - (before.inserts[table] ?? 0)]))
  assert.deepEqual(inserted, {
    tollgate_instances: 0, tollgate_turns: 2, tollgate_sessions: 2, tollgate_events: 9, tollgate_checkpoints: 3, tollgate_audit: 2
  })
  const audited = await g.gateway.audit.ledger.read('local', 0, 100)
  const calls = stored.filter((e) => e.event.kind === 'tool_call').map((e) => (e.event as { call_id: string }).call_id)
  assert.deepEqual(audited.map((e) => [e.kind, e.data.call_id]), calls.map((id) => ['tool_execution', id]))
})

test('audit entries appended in a tick ride on that tick\'s event commit, in the order appended (decision 0277)', async (t) => {
  const defer = deferrer(t)
  const { store, counter } = await openStore(defer)
  const { journal } = storedJournal(defer, store)
  const ledger = store.auditLedger()
  const before = counter.snapshot()
  const appended = [
    ledger.append('acme', { kind: 'permission', data: { n: 1 } }),
    ledger.append('other', { kind: 'permission', data: { n: 2 } }),
    ledger.append('acme', { kind: 'tool_execution', data: { n: 3 } })
  ]
  journal.append(envelope(1))
  journal.append(envelope(2))
  const entries = await Promise.all(appended)
  const after = counter.snapshot()
  assert.equal(after.commits - before.commits, 1, 'the events and the entries share one commit')
  assert.equal(after.inserts.tollgate_events, 2)
  assert.equal(after.inserts.tollgate_audit, 3)
  assert.deepEqual(entries.map((e) => [e.tenant, e.seq, e.data.n]), [['acme', 1, 1], ['other', 1, 2], ['acme', 2, 3]])
  assert.equal((entries[2] as { prev_hash: string }).prev_hash, (entries[0] as { hash: string }).hash, 'chained within the batch')
  assert.deepEqual((await ledger.read('acme', 0, 10)).map((e) => e.data.n), [1, 3])
})

test('an audit entry with no event to ride on commits on its own by the end of the next tick, with the others of its tick', async (t) => {
  const defer = deferrer(t)
  const { store, counter } = await openStore(defer)
  const ledger = store.auditLedger()
  const before = counter.snapshot()
  const entries = await Promise.all([
    ledger.append('acme', { kind: 'approval', data: { n: 1 } }),
    ledger.append('acme', { kind: 'approval', data: { n: 2 } })
  ])
  assert.equal(counter.snapshot().commits - before.commits, 1)
  assert.deepEqual(entries.map((e) => e.seq), [1, 2])
  // A later tick's entry continues the chain.
  const third = await ledger.append('acme', { kind: 'receipt', data: { n: 3 } })
  assert.deepEqual([third.seq, third.prev_hash], [3, (entries[1] as { hash: string }).hash])
})

test('a joined write that fails is undone alone: the events it rode with are written, the next entries chain on', async (t) => {
  const defer = deferrer(t)
  const { store } = await openStore(defer)
  const { journal } = storedJournal(defer, store)
  const ledger = store.auditLedger()
  // A cyclic value cannot be serialised: this batch's write throws inside the event transaction.
  const cyclic: Record<string, unknown> = {}
  cyclic.self = cyclic
  const failed = ledger.append('acme', { kind: 'permission', data: cyclic })
  journal.append(envelope(1))
  await assert.rejects(failed)
  assert.deepEqual((await store.readEvents('turn_1', 0, 10)).map((e) => e.seq), [1])
  const next = await ledger.append('acme', { kind: 'permission', data: { n: 2 } })
  assert.equal(next.seq, 1, 'nothing of the failed batch was kept')
})

test('entries still waiting for a commit are written when the store closes', async (t) => {
  const defer = deferrer(t)
  const path = await scratchDb(defer)
  const store = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0 })
  const pending = store.auditLedger().append('acme', { kind: 'approval', data: { n: 1 } })
  await store.close()
  assert.equal((await pending).seq, 1)
  const reopened = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0 })
  defer(async () => { await reopened.close() })
  assert.deepEqual((await reopened.auditLedger().read('acme', 0, 10)).map((e) => e.data.n), [1])
})
