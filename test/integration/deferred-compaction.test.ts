/**
 * Compaction off the finishing transaction (decision 0278): a finished turn's rows stay as written
 * until a later pass compacts them, read the same either way, are compacted by a graceful stop at
 * the latest, and after a crash between finish and compaction are compacted by the next start.
 * The finished turn's text is then kept once, in its record; its documents are deflated.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type { BusEnvelope } from '../../src/core/envelope.js'
import { unpackDoc } from '../../src/store/doc-pack.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import type { SessionRecord, TurnRecord } from '../../src/store/store.js'
import { deferrer, type Defer } from '../helpers/services.js'
import { copyAsCrashed } from '../helpers/sqlite-files.js'
import { eventually } from '../helpers/eventually.js'

const PIECES = Array.from({ length: 200 }, (_, i) => `tok${String(i).padStart(4, '0')} `)
const ANSWER = PIECES.join('')

async function scratch (defer: Defer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-compaction-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

function turn (status: TurnRecord['status'], over: Partial<TurnRecord> = {}): TurnRecord {
  const now = new Date().toISOString()
  return {
    turn_id: 'turn_1', session_id: 'ses_1', agent: 'default', owner: 'local/local', status, created_at: now, updated_at: now,
    iterations: 1, tool_calls: [], approvals: [], pending_approvals: [], last_seq: PIECES.length + 2, ...over
  }
}

const SESSION_AT = '2026-12-06T10:00:00.000Z'

function session (): SessionRecord {
  const now = SESSION_AT
  return {
    session_id: 'ses_1', owner: 'local/local', agent: 'default', created_at: now, updated_at: now, turn_ids: ['turn_1'],
    history: [{ role: 'user', content: 'stream' }, { role: 'assistant', content: ANSWER }], always_allowed: []
  }
}

function envelope (seq: number, event: BusEnvelope['event']): BusEnvelope {
  return { turn_id: 'turn_1', session_id: 'ses_1', tenant: 'local', seq, ts: new Date(Date.UTC(2026, 11, 6) + seq * 20).toISOString(), event }
}

const EVENTS: BusEnvelope[] = [
  envelope(1, { kind: 'iteration', n: 1 }),
  ...PIECES.map((text, i) => envelope(i + 2, { kind: 'text.delta', text })),
  envelope(PIECES.length + 2, { kind: 'turn.completed', final_text: ANSWER, usage: { prompt_tokens: 1, completion_tokens: 200, total_tokens: 201, cost_usd: null } } as BusEnvelope['event'])
]

/** Streams the turn a piece per write (a row each), then finishes it with its terminal event. */
async function streamAndFinish (store: SqliteStore): Promise<void> {
  await store.saveTurn(turn('running', { final_text: undefined }))
  // The journal's group write, as a stream's flushes make it (a row each).
  for (const e of EVENTS.slice(0, -1)) store.appendEventsNow([e])
  await store.saveTurnAndSession(turn('completed', { final_text: ANSWER }), session(), EVENTS.slice(-1))
}

/** `rows`: the turn's rows, keyed and in the delta log; `logged`: those in the delta log. */
function rowsOf (path: string): { rows: number, logged: number, queued: number, texts: number } {
  const db = new Database(path, { readonly: true })
  try {
    const logged = (db.prepare('SELECT count(*) AS n FROM tollgate_delta_log WHERE turn_id = \'turn_1\'').get() as { n: number }).n
    return {
      rows: (db.prepare('SELECT count(*) AS n FROM tollgate_events WHERE turn_id = \'turn_1\'').get() as { n: number }).n + logged,
      logged,
      queued: (db.prepare('SELECT count(*) AS n FROM tollgate_compactions').get() as { n: number }).n,
      // Event rows whose document (TEXT, or deflated) holds a piece of the answer verbatim.
      texts: (db.prepare('SELECT doc FROM tollgate_events WHERE turn_id = \'turn_1\'').all() as Array<{ doc: string | Buffer }>)
        .filter((r) => unpackDoc(r.doc).includes('tok0150')).length
    }
  } finally {
    db.close()
  }
}

async function assertReplays (store: SqliteStore): Promise<void> {
  for (const after of [0, 1, 2, 3, 100, 150, PIECES.length, PIECES.length + 1, PIECES.length + 2]) {
    for (const limit of [1, 7, 1000]) {
      assert.deepEqual(await store.readEvents('turn_1', after, limit), EVENTS.filter((e) => e.seq > after).slice(0, limit), `after ${after}, limit ${limit}`)
    }
  }
  assert.equal(await store.lastEventSeq('turn_1'), EVENTS.length)
}

test('sqlite: a finished turn is compacted after its finishing transaction, reads the same before and after, and keeps its text once', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  const store = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0 })
  let closed = false
  defer(async () => { if (!closed) await store.close() })
  await streamAndFinish(store)
  // Finished, not compacted yet: the rows as written, the turn queued.
  const written = rowsOf(path)
  assert.equal(written.rows, EVENTS.length)
  // Every delta row after the first went to the delta log (decision 0279), and stays there until compacted.
  assert.equal(written.logged, PIECES.length - 1)
  assert.equal(written.queued, 1)
  await assertReplays(store)
  // A later pass compacts it.
  await eventually(() => rowsOf(path).queued === 0, { what: 'the turn compacted', timeoutMs: 10_000 })
  assert.deepEqual(rowsOf(path), { rows: 3, logged: 0, queued: 0, texts: 0 })
  await assertReplays(store)
  assert.equal((await store.getTurn('turn_1'))?.final_text, ANSWER)
  assert.deepEqual(await store.getSession('local', 'ses_1'), session())
  await store.close()
  closed = true
})

test('sqlite: a graceful stop compacts the turns still queued', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  const store = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0 })
  await streamAndFinish(store)
  await store.close()
  assert.deepEqual(rowsOf(path), { rows: 3, logged: 0, queued: 0, texts: 0 })
  const again = new SqliteStore({ path, instanceId: 'inst-b', checkpointMs: 0 })
  defer(async () => { await again.close() })
  await assertReplays(again)
})

test('sqlite: a crash between a turn\'s finish and its compaction leaves rows that replay exactly, compacted by the next start', async (t) => {
  const defer = deferrer(t)
  const dir = await scratch(defer)
  const path = join(dir, 'tollgate.db')
  const store = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0 })
  defer(async () => { await store.close() })
  await streamAndFinish(store)
  // The files as a crash right now would leave them (every write is in the database or its WAL).
  const crashed = join(dir, 'crashed.db')
  await copyAsCrashed(path, crashed)
  const after = new SqliteStore({ path: crashed, instanceId: 'inst-b', checkpointMs: 0 })
  let closed = false
  defer(async () => { if (!closed) await after.close() })
  // Read before the start's pass ran: the rows as written.
  await assertReplays(after)
  await eventually(() => rowsOf(crashed).queued === 0, { what: 'the restarted store compacting the turn', timeoutMs: 10_000 })
  await assertReplays(after)
  await after.close()
  closed = true
  assert.deepEqual(rowsOf(crashed), { rows: 3, logged: 0, queued: 0, texts: 0 })
})

test('sqlite: rows and documents written by the previous schema read back as written', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  // A schema-5 file: compacted runs holding their texts, terminal events holding final_text, documents as TEXT.
  const first = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0 })
  await first.close()
  const db = new Database(path)
  const runDoc = JSON.stringify({
    run: 'text.delta', turn_id: 'turn_1', session_id: 'ses_1', tenant: 'local', ts: EVENTS[1]?.ts, dt: PIECES.slice(1).map(() => 20), texts: PIECES
  })
  db.prepare('INSERT INTO tollgate_events (turn_id, seq, last_seq, doc) VALUES (?, ?, ?, ?)').run('turn_1', 2, PIECES.length + 1, runDoc)
  for (const e of [EVENTS[0], EVENTS.at(-1)] as BusEnvelope[]) db.prepare('INSERT INTO tollgate_events (turn_id, seq, last_seq, doc) VALUES (?, ?, NULL, ?)').run('turn_1', e.seq, JSON.stringify(e))
  const done = turn('completed', { final_text: ANSWER })
  db.prepare(`INSERT INTO tollgate_turns (turn_id, session_id, owner, status, instance_id, finished_ms, doc, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)`).run(done.turn_id, done.session_id, done.owner, done.status, 'inst-a', Date.now(), JSON.stringify(done), done.created_at)
  db.prepare('INSERT INTO tollgate_sessions (tenant, session_id, owner, doc, updated_at) VALUES (?, ?, ?, ?, ?)')
    .run('local', 'ses_1', 'local/local', JSON.stringify(session()), session().updated_at)
  db.pragma('user_version = 5')
  db.close()
  const store = new SqliteStore({ path, instanceId: 'inst-b', checkpointMs: 0 })
  defer(async () => { await store.close() })
  await assertReplays(store)
  assert.deepEqual(await store.getTurn('turn_1'), done)
  assert.deepEqual(await store.getSession('local', 'ses_1'), session())
})

/** Makes every delete from `table` fail (a real SQLite error, raised in the store's own statement) until `heal()`. */
function breakDeletes (path: string, table: 'tollgate_events' | 'tollgate_delta_log'): { heal: () => void } {
  const db = new Database(path)
  db.exec(`CREATE TRIGGER test_no_delete BEFORE DELETE ON ${table} BEGIN SELECT RAISE(ABORT, 'injected: no delete from ${table}'); END`)
  db.close()
  return {
    heal: () => {
      const again = new Database(path)
      again.exec('DROP TRIGGER test_no_delete')
      again.close()
    }
  }
}

for (const [table, what] of [['tollgate_events', 'a turn\'s compaction (undone alone)'], ['tollgate_delta_log', 'a pass\'s commit (the delta log cut)']] as const) {
  test(`sqlite: when ${what} fails, it is reported, the rows read the same, and a retry compacts the turn`, async (t) => {
    const defer = deferrer(t)
    const path = join(await scratch(defer), 'tollgate.db')
    const errors: string[] = []
    const store = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0, compactRetryMs: 50, onCompactionError: (err) => { errors.push((err as Error).message) } })
    let closed = false
    defer(async () => { if (!closed) await store.close() })
    const broken = breakDeletes(path, table)
    await streamAndFinish(store)
    await eventually(() => errors.length > 0, { what: 'the failed compaction reported', timeoutMs: 10_000 })
    assert.deepEqual(errors, [`injected: no delete from ${table}`])
    // Nothing changed: the turn still queued, its rows as written (the piece in the delta log, the
    // answer in the keyed terminal event).
    assert.deepEqual(rowsOf(path), { rows: EVENTS.length, logged: PIECES.length - 1, queued: 1, texts: 1 })
    await assertReplays(store)
    broken.heal()
    await store.compacted()
    assert.deepEqual(rowsOf(path), { rows: 3, logged: 0, queued: 0, texts: 0 })
    assert.equal(errors.length, 1)
    await assertReplays(store)
    await store.close()
    closed = true
  })
}

test('sqlite: a compaction that keeps failing is tried three times more, then left queued for the next start, which compacts it', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratch(defer), 'tollgate.db')
  const errors: unknown[] = []
  const store = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0, compactRetryMs: 20, onCompactionError: (err) => { errors.push(err) } })
  let closed = false
  defer(async () => { if (!closed) await store.close() })
  const broken = breakDeletes(path, 'tollgate_events')
  await streamAndFinish(store)
  // The first try and three retries; then nothing waits any more.
  await store.compacted()
  assert.equal(errors.length, 4)
  assert.equal(rowsOf(path).queued, 1)
  await assertReplays(store)
  // A graceful stop does not try it again: it stays queued, rows as written.
  await store.close()
  closed = true
  assert.equal(errors.length, 4)
  // The stop moved the delta log's rows keyed: the piece's row and the terminal event hold the text.
  assert.deepEqual(rowsOf(path), { rows: EVENTS.length, logged: 0, queued: 1, texts: 2 })
  broken.heal()
  const again = new SqliteStore({ path, instanceId: 'inst-b', checkpointMs: 0 })
  defer(async () => { await again.close() })
  await assertReplays(again)
  await again.compacted()
  assert.deepEqual(rowsOf(path), { rows: 3, logged: 0, queued: 0, texts: 0 })
  await assertReplays(again)
})
