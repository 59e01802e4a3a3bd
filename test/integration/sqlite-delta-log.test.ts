/**
 * The SQLite delta log (decision 0279): a running turn's delta rows after its first are appended
 * to `tollgate_delta_log` (rowid order) instead of the keyed event table, read back merged with
 * its keyed rows, taken into runs by compaction, and cut from the start of the log once no turn
 * needs them. A write that rolls back is forgotten with it; a turn holding the log's start too
 * long has its rows copied keyed; a crash leaves nothing read twice.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type { BusEnvelope } from '../../src/core/envelope.js'
import { SqliteStore, type SqliteStoreOptions } from '../../src/store/sqlite.js'
import type { SessionRecord, TurnRecord } from '../../src/store/store.js'
import { deferrer, type Defer } from '../helpers/services.js'
import { copyAsCrashed } from '../helpers/sqlite-files.js'

async function scratch (defer: Defer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-delta-log-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

function open (defer: Defer, path: string, over: Partial<SqliteStoreOptions> = {}): SqliteStore {
  const store = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0, ...over })
  let closed = false
  const close = store.close.bind(store)
  store.close = async () => {
    if (closed) return
    closed = true
    await close()
  }
  defer(async () => { await store.close() })
  return store
}

const T0 = Date.UTC(2026, 11, 6)

function envelope (turnId: string, seq: number, event: BusEnvelope['event']): BusEnvelope {
  return { turn_id: turnId, session_id: `ses_${turnId}`, tenant: 'local', seq, ts: new Date(T0 + seq * 20).toISOString(), event }
}

const delta = (turnId: string, seq: number): BusEnvelope => envelope(turnId, seq, { kind: 'text.delta', text: `${turnId}-piece${seq} ` })

function record (turnId: string, status: TurnRecord['status'], over: Partial<TurnRecord> = {}): TurnRecord {
  const now = new Date(T0).toISOString()
  return {
    turn_id: turnId, session_id: `ses_${turnId}`, agent: 'default', owner: 'local/local', status, created_at: now, updated_at: now,
    iterations: 1, tool_calls: [], approvals: [], pending_approvals: [], last_seq: 0, ...over
  }
}

function session (turnId: string): SessionRecord {
  const now = new Date(T0).toISOString()
  return { session_id: `ses_${turnId}`, owner: 'local/local', agent: 'default', created_at: now, updated_at: now, turn_ids: [turnId], history: [], always_allowed: [] }
}

/** A turn's events: `iteration`, `pieces` deltas, and (when finished) `turn.completed` with their text. */
function streamOf (turnId: string, pieces: number, finished: boolean): BusEnvelope[] {
  const deltas = Array.from({ length: pieces }, (_, i) => delta(turnId, i + 2))
  const text = deltas.map((e) => (e.event as { text: string }).text).join('')
  const completed = envelope(turnId, pieces + 2, {
    kind: 'turn.completed', final_text: text, usage: { prompt_tokens: 1, completion_tokens: pieces, total_tokens: pieces + 1, cost_usd: null }
  } as BusEnvelope['event'])
  return [envelope(turnId, 1, { kind: 'iteration', n: 1 }), ...deltas, ...(finished ? [completed] : [])]
}

/**
 * Writes a turn's events one group write each (the journal's hot path, a row each, as a stream's
 * flushes do); finishes it with its last when `finished`.
 */
async function write (store: SqliteStore, events: readonly BusEnvelope[], finished: boolean): Promise<void> {
  const turnId = (events[0] as BusEnvelope).turn_id
  if ((await store.getTurn(turnId)) === null) await store.saveTurn(record(turnId, 'running'))
  const body = finished ? events.slice(0, -1) : events
  for (const e of body) store.appendEventsNow([e])
  if (finished) {
    const last = events.at(-1) as BusEnvelope
    const text = (last.event as { final_text: string }).final_text
    store.appendEventsNow([last], [], [{ turn: record(turnId, 'completed', { final_text: text, last_seq: last.seq }), session: session(turnId) }])
  }
}

function countRows (path: string, turnId: string): { keyed: number, logged: number } {
  const db = new Database(path, { readonly: true })
  try {
    const n = (sql: string): number => (db.prepare(sql).get(turnId) as { n: number }).n
    return {
      keyed: n('SELECT count(*) AS n FROM tollgate_events WHERE turn_id = ?'),
      logged: n('SELECT count(*) AS n FROM tollgate_delta_log WHERE turn_id = ?')
    }
  } finally {
    db.close()
  }
}

async function assertReplays (store: SqliteStore, events: readonly BusEnvelope[]): Promise<void> {
  const turnId = (events[0] as BusEnvelope).turn_id
  for (let after = 0; after <= events.length; after++) {
    for (const limit of [1, 3, 1000]) {
      assert.deepEqual(await store.readEvents(turnId, after, limit), events.filter((e) => e.seq > after).slice(0, limit), `${turnId} after ${after}, limit ${limit}`)
    }
  }
  assert.equal(await store.lastEventSeq(turnId), events.length)
}

test('sqlite: a running turn\'s later delta rows go to the delta log, read back merged with its keyed rows; a write that rolls back is forgotten', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  const store = open(defer, path)
  const events = [
    envelope('turn_a', 1, { kind: 'iteration', n: 1 }), delta('turn_a', 2), delta('turn_a', 3),
    envelope('turn_a', 4, { kind: 'iteration', n: 2 }), delta('turn_a', 5), delta('turn_a', 6)
  ]
  await write(store, events, false)
  // The first delta row is keyed, every later one (after another event too) in the log.
  assert.deepEqual(countRows(path, 'turn_a'), { keyed: 3, logged: 3 })
  await assertReplays(store, events)

  // A write whose transaction fails (a record the table refuses) leaves neither rows nor memory of them.
  const refused = { ...record('turn_a', 'running'), owner: null } as unknown as TurnRecord
  assert.throws(() => { store.appendEventsNow([delta('turn_a', 7), delta('turn_a', 8)], [], [], [refused]) }, /NOT NULL/)
  assert.deepEqual(countRows(path, 'turn_a'), { keyed: 3, logged: 3 })
  await assertReplays(store, events)
  // Written again, each piece is there once (one run row for the two).
  store.appendEventsNow([delta('turn_a', 7), delta('turn_a', 8)])
  assert.deepEqual(countRows(path, 'turn_a'), { keyed: 3, logged: 4 })
  await assertReplays(store, [...events, delta('turn_a', 7), delta('turn_a', 8)])
})

test('sqlite: a finished turn leaves the delta log once compacted, and the log is cut from its start', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  const store = open(defer, path)
  const events = streamOf('turn_b', 30, true)
  await write(store, events, true)
  assert.deepEqual(countRows(path, 'turn_b'), { keyed: 3, logged: 29 })
  await assertReplays(store, events)
  await store.compacted()
  // iteration, one run referring to the record's text, turn.completed.
  assert.deepEqual(countRows(path, 'turn_b'), { keyed: 3, logged: 0 })
  await assertReplays(store, events)
})

test('sqlite: a finished turn pruned before its compaction stays pruned: the log\'s memory of its rows goes with them', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  const store = open(defer, path)
  const events = streamOf('turn_p', 30, true)
  await write(store, events, true)
  assert.deepEqual(countRows(path, 'turn_p'), { keyed: 3, logged: 29 })
  // Before the compaction's first pass (COMPACT_DELAY_MS after the finish): the record's updated_at is a day back.
  await store.prune(Date.now())
  await store.compacted()
  assert.deepEqual(countRows(path, 'turn_p'), { keyed: 0, logged: 0 })
  assert.deepEqual(await store.readEvents('turn_p', 0, 1000), [])
})

test('sqlite: the log is cut a bounded number of rows per pass, and the passes go on after the last compaction until it is cut', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  // The cuts, as the statements SQLite ran: `DELETE FROM tollgate_delta_log WHERE id < n`.
  const cuts: number[] = []
  const probe = {
    statement: (sql: string) => {
      const m = /^DELETE FROM tollgate_delta_log WHERE id < (\d+)(?:\.0)?$/.exec(sql)
      if (m !== null) cuts.push(Number(m[1]))
    },
    checkpoint: () => {}
  }
  const store = open(defer, path, { deltaLogCutRows: 5, probe })
  // Three streams whose pieces interleave, as a batch's do: the log's start is held until the last is compacted.
  const streams = ['turn_x', 'turn_y', 'turn_z'].map((id) => streamOf(id, 20, true))
  for (const events of streams) await store.saveTurn(record((events[0] as BusEnvelope).turn_id, 'running'))
  for (let i = 0; i < 21; i++) for (const events of streams) store.appendEventsNow([events[i] as BusEnvelope])
  for (const events of streams) await write(store, events.slice(-1), true)
  assert.deepEqual(streams.map((events) => countRows(path, (events[0] as BusEnvelope).turn_id).logged), [19, 19, 19])
  await store.compacted()
  for (const events of streams) assert.deepEqual(countRows(path, (events[0] as BusEnvelope).turn_id), { keyed: 3, logged: 0 })
  // 57 rows, ids 1 to 57, cut 5 at most at a time: 12 cuts or more, where three passes at most
  // compacted the turns; the rest ran with the queue empty.
  assert.equal(cuts.at(-1), 58, `cuts: ${cuts.join(' ')}`)
  assert.ok(cuts.length >= 12, `cuts: ${cuts.join(' ')}`)
  cuts.forEach((to, i) => { assert.ok(to - (cuts[i - 1] ?? 1) > 0 && to - (cuts[i - 1] ?? 1) <= 5, `cuts: ${cuts.join(' ')}`) })
  for (const events of streams) await assertReplays(store, events)
})

test('sqlite: a turn that holds the start of the delta log too long has its rows copied keyed, and the log is cut past it', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  const store = open(defer, path, { deltaLogPinRows: 20 })
  // turn_p streams, then waits (an approval, say) while turn_q streams 40 pieces and finishes.
  const held = streamOf('turn_p', 4, false)
  await write(store, held, false)
  assert.deepEqual(countRows(path, 'turn_p'), { keyed: 2, logged: 3 })
  const other = streamOf('turn_q', 40, true)
  await write(store, other, true)
  await store.compacted()
  assert.deepEqual(countRows(path, 'turn_p'), { keyed: 5, logged: 0 }, 'turn_p\'s rows copied keyed, the log cut')
  assert.deepEqual(countRows(path, 'turn_q'), { keyed: 3, logged: 0 })
  await assertReplays(store, held)
  await assertReplays(store, other)
  // turn_p streams on: its later rows go to the log again, and read back with the copied ones.
  const more = [...held, delta('turn_p', 6), delta('turn_p', 7)]
  await write(store, more.slice(-2), false)
  assert.deepEqual(countRows(path, 'turn_p'), { keyed: 5, logged: 2 })
  await assertReplays(store, more)
  // A graceful stop folds a running turn's log rows keyed; they read the same after.
  await store.close()
  assert.deepEqual(countRows(path, 'turn_p'), { keyed: 7, logged: 0 })
  const again = open(defer, path)
  await assertReplays(again, more)
})

test('sqlite: a crash leaves delta log rows of compacted turns, running turns and queued ones; the next start reads each event once', async (t) => {
  const defer = deferrer(t)
  const dir = await scratch(defer)
  const path = join(dir, 'tollgate.db')
  const store = open(defer, path)
  // Running, holding the log's start: the compacted turn's rows stay in the log behind it.
  const running = streamOf('turn_r', 5, false)
  await write(store, running, false)
  const compacted = streamOf('turn_c', 20, true)
  await write(store, compacted, true)
  await store.compacted()
  assert.deepEqual(countRows(path, 'turn_c'), { keyed: 3, logged: 19 }, 'compacted, its log rows not cut yet')
  // Finished, its compaction still queued when the crash comes.
  const queued = streamOf('turn_q', 10, true)
  await write(store, queued, true)
  assert.deepEqual(countRows(path, 'turn_q'), { keyed: 3, logged: 9 })
  const crashed = join(dir, 'crashed.db')
  await copyAsCrashed(path, crashed)

  const after = open(defer, crashed, { instanceId: 'inst-b' })
  assert.deepEqual(countRows(crashed, 'turn_c'), { keyed: 3, logged: 0 }, 'a compacted turn\'s rows are dropped, not read again')
  assert.deepEqual(countRows(crashed, 'turn_r'), { keyed: 6, logged: 0 })
  await assertReplays(after, running)
  await assertReplays(after, compacted)
  await assertReplays(after, queued)
  await after.compacted()
  await assertReplays(after, queued)
  assert.deepEqual(countRows(crashed, 'turn_q'), { keyed: 3, logged: 0 })
})

test('sqlite: a retried write of a turn that finished meanwhile goes keyed, and its events survive a restart', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  const store = open(defer, path)
  const events = streamOf('turn_f', 6, true)
  // Streamed up to seq 6, then its finishing group failed: the record was saved on its own...
  await write(store, events.slice(0, 6), false)
  const last = events.at(-1) as BusEnvelope
  await store.saveTurnAndSession(record('turn_f', 'completed', { final_text: (last.event as { final_text: string }).final_text, last_seq: last.seq }), session('turn_f'))
  await store.compacted()
  // ...and the writer's retry brings its last delta and terminal event.
  await store.appendEvents(events.slice(6))
  assert.equal(countRows(path, 'turn_f').logged, 0, 'the retry wrote nothing to the delta log')
  await assertReplays(store, events)
  await store.close()
  await assertReplays(open(defer, path), events)
})

test('sqlite: a delta log row id is never given twice, and the log is cut again after it was cut empty', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  const store = open(defer, path)
  const maxId = (): number => {
    const db = new Database(path, { readonly: true })
    try {
      return (db.prepare('SELECT coalesce(max(id), 0) AS m FROM tollgate_delta_log').get() as { m: number }).m
    } finally {
      db.close()
    }
  }
  await write(store, streamOf('turn_1', 30, true), true)
  await store.compacted()
  const logRows = (turnId: string): number => countRows(path, turnId).logged
  assert.equal(logRows('turn_1'), 0, 'cut empty')
  const second = streamOf('turn_2', 10, false)
  await write(store, second, false)
  const db = new Database(path, { readonly: true })
  const ids = (db.prepare('SELECT id FROM tollgate_delta_log ORDER BY id').all() as Array<{ id: number }>).map((r) => r.id)
  db.close()
  assert.ok((ids[0] ?? 0) > 29, `ids after a cut continue past the earlier ones: ${ids.join(',')}`)
  await write(store, [envelope('turn_2', 12, { kind: 'turn.completed', final_text: '', usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, cost_usd: null } } as BusEnvelope['event'])], true)
  await store.compacted()
  assert.equal(logRows('turn_2'), 0, 'the second turn\'s rows are cut too')
  assert.equal(maxId(), 0, 'the log is empty')
})

test('sqlite: a first delta row written again with more pieces keeps its stored ones and adds the rest', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  const first = open(defer, path)
  await write(first, [envelope('turn_w', 1, { kind: 'iteration', n: 1 })], false)
  first.appendEventsNow([delta('turn_w', 2), delta('turn_w', 3)])
  await first.close()
  // After a restart (no memory of the turn's rows), a group holding those pieces and more.
  const again = open(defer, path, { instanceId: 'inst-b' })
  again.appendEventsNow([delta('turn_w', 2), delta('turn_w', 3), delta('turn_w', 4), delta('turn_w', 5)])
  again.appendEventsNow([delta('turn_w', 6)])
  const all = [envelope('turn_w', 1, { kind: 'iteration', n: 1 }), ...[2, 3, 4, 5, 6].map((n) => delta('turn_w', n))]
  await assertReplays(again, all)
  await again.close()
  await assertReplays(open(defer, path, { instanceId: 'inst-c' }), all)
})

test('sqlite: a schema-7 file, whose delta log counted ids with AUTOINCREMENT, is made over without it and its rows read back', async (t) => {
  const defer = deferrer(t)
  const dir = await scratch(defer)
  const path = join(dir, 'tollgate.db')
  const store = open(defer, path)
  const running = streamOf('turn_r', 8, false)
  await write(store, running, false)
  // A crash copy, its log rebuilt as schema 7 made it (the same columns, ids from AUTOINCREMENT).
  const old = join(dir, 'schema7.db')
  await copyAsCrashed(path, old)
  const db = new Database(old)
  db.exec(`ALTER TABLE tollgate_delta_log RENAME TO log_now;
    CREATE TABLE tollgate_delta_log (id INTEGER PRIMARY KEY AUTOINCREMENT, turn_id TEXT NOT NULL, seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, doc NOT NULL);
    INSERT INTO tollgate_delta_log SELECT * FROM log_now; DROP TABLE log_now;`)
  db.pragma('user_version = 7')
  assert.equal(countRowsIn(db, 'turn_r'), 7, 'the later delta rows are in the old log')
  db.close()

  const after = open(defer, old, { instanceId: 'inst-b' })
  await assertReplays(after, running)
  const more = [...running, delta('turn_r', 10)]
  after.appendEventsNow([more.at(-1) as BusEnvelope])
  await assertReplays(after, more)
  await after.close()
  const check = new Database(old, { readonly: true })
  try {
    const sql = (check.prepare("SELECT sql FROM sqlite_master WHERE name = 'tollgate_delta_log'").get() as { sql: string }).sql
    assert.doesNotMatch(sql, /AUTOINCREMENT/i)
    const counters = check.prepare("SELECT name FROM sqlite_master WHERE name = 'sqlite_sequence'").get() === undefined
      ? []
      : check.prepare("SELECT name FROM sqlite_sequence WHERE name LIKE 'tollgate_delta_log%'").all()
    assert.deepEqual(counters, [], 'no AUTOINCREMENT counter is kept for the log')
    assert.equal(check.pragma('user_version', { simple: true }), 8)
  } finally {
    check.close()
  }
})

function countRowsIn (db: Database.Database, turnId: string): number {
  return (db.prepare('SELECT count(*) AS n FROM tollgate_delta_log WHERE turn_id = ?').get(turnId) as { n: number }).n
}
