/**
 * Embedded store on SQLite (better-sqlite3, WAL). One gateway process owns the database file: it
 * holds an exclusive lock on a companion file (`<path>-lock`) for as long as it runs, so a second
 * one fails at start instead of sharing the file unnoticed — and at start every turn still
 * `running` belongs to a dead process. Statements run synchronously, which also makes every write
 * land in call order.
 *
 * The WAL is never checkpointed inside a write (`wal_autocheckpoint = 0`): every `checkpointMs` a
 * worker thread's connection copies the WAL into the database file, and once the WAL is large a
 * catch-up on this connection copies the rest so that it restarts (sqlite-checkpointer.ts). The
 * database file itself is in normal locking mode so that the worker's connection can open it.
 */
import type { SpendLedger } from './spend-ledger.js'
import { SqliteSpendLedger } from './spend-sqlite.js'
import type { ScheduleBook } from './schedule-book.js'
import { SqliteScheduleBook } from './schedule-sqlite.js'
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import Database from 'better-sqlite3'
import type { BusEnvelope, CheckpointRow } from '../core/envelope.js'
import { tenantOf } from '../core/tenancy.js'
import { WalCheckpointer } from './sqlite-checkpointer.js'
import { decodeSession, decodeTurn, encodeDoc, finishedMs, LEASE_FORGET_MS } from './codec.js'
import { CompactionRetries, COMPACT_RETRY_MS, StreamedDeltas } from './compaction-schedule.js'
import { compact, COMPACT_DELAY_MS, MAX_RUN, readExpanded, toRows, type RowOfEvents, type StoredRow } from './delta-runs.js'
import { packDoc, unpackDoc } from './doc-pack.js'
import type { SqlProbe } from './sql-probe.js'
import { SharedCommit } from './sqlite-shared-commit.js'
import { DELTA_LOG_TABLE, DeltaLog } from './sqlite-delta-log.js'
import { SqliteAuditLedger } from './audit-sqlite.js'
import type { AuditLedger } from './audit-chain.js'
import type { OutboxPlanner } from './outbox.js'
import { SqliteOutbox } from './outbox-sqlite.js'
import {
  FIRST_PAGE, type FinishedTurn, type IdempotencyClaim, type IdempotencyRecord, type PageKey, type RunningTurn, type SessionRecord,
  type Store, TERMINAL_TURN_STATUSES, type TurnFilter, type TurnRecord
} from './store.js'

/**
 * 1: first; 2: listing columns; 3: durable turns' checkpoints (a new table, nothing to convert);
 * 4: sessions keyed by tenant and id; 5: delta runs (`tollgate_events.last_seq`, null on the rows
 * written before: each is one event, as it was); 6: compaction off the finishing transaction
 * (`tollgate_compactions`, a new table), runs and terminal events that refer to the turn record's
 * final_text, documents deflated as BLOBs (rows written before read as they did; an earlier
 * Tollgate could not read the new ones, hence the version); 7: running turns' later delta rows
 * in `tollgate_delta_log` (a new table; an earlier Tollgate would not read them).
 */
const SCHEMA_VERSION = 8
/** Free pages given back per prune or stop, at most: 256 MiB of 4 KiB pages. */
const RECLAIM_PAGES = 65_536
/** Each compaction pass runs at most this long on the event loop (whole turns, one transaction per pass)... */
const COMPACT_SLICE_MS = 2
/** ...and the next starts this long after it, so that streams in flight keep their pace. */
const COMPACT_GAP_MS = 10
/** Period of the worker's WAL copy. */
const CHECKPOINT_MS = 1000
/** Page cache (KiB; SQLite's default is 2 MiB): a busy gateway's hot index pages stay in memory. */
const CACHE_KIB = 16 * 1024
/** A WAL file that grew past this under a burst is truncated back when it restarts. */
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024
/**
 * WAL size (frames of a 4 KiB page) at which the event loop catches up so the WAL restarts: at
 * `journal_size_limit`, which truncates the file back to that size when it does.
 */
const CATCH_UP_FRAMES = WAL_SIZE_LIMIT_BYTES / 4096

/** The sessions table of schema 4: a session id is unique within its tenant only. */
function sessionsTable (name: string): string {
  return `CREATE TABLE IF NOT EXISTS ${name} (
  tenant TEXT NOT NULL,
  session_id TEXT NOT NULL,
  owner TEXT NOT NULL,
  doc TEXT NOT NULL,
  updated_at TEXT,
  PRIMARY KEY (tenant, session_id)
);`
}

const SCHEMA = `
${sessionsTable('tollgate_sessions')}
CREATE TABLE IF NOT EXISTS tollgate_turns (
  turn_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  owner TEXT NOT NULL,
  status TEXT NOT NULL,
  instance_id TEXT,
  finished_ms INTEGER,
  doc TEXT NOT NULL,
  created_at TEXT
);
CREATE INDEX IF NOT EXISTS tollgate_turns_running ON tollgate_turns (status) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS tollgate_turns_finished ON tollgate_turns (finished_ms) WHERE finished_ms IS NOT NULL;
CREATE TABLE IF NOT EXISTS tollgate_events (
  turn_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  doc TEXT NOT NULL,
  last_seq INTEGER,
  PRIMARY KEY (turn_id, seq)
) WITHOUT ROWID;
${DELTA_LOG_TABLE}
CREATE TABLE IF NOT EXISTS tollgate_compactions (
  turn_id TEXT PRIMARY KEY
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tollgate_instances (
  instance_id TEXT PRIMARY KEY,
  expires_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tollgate_checkpoints (
  turn_id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL,
  doc TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tollgate_idempotency (
  owner TEXT NOT NULL,
  idem_key TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  expires_ms INTEGER NOT NULL,
  PRIMARY KEY (owner, idem_key)
) WITHOUT ROWID;
`

/** After the schema-1 upgrade: the listing columns exist. */
const LIST_INDEXES = `
CREATE INDEX IF NOT EXISTS tollgate_sessions_by_owner ON tollgate_sessions (owner, updated_at DESC, session_id DESC);
CREATE INDEX IF NOT EXISTS tollgate_turns_by_owner ON tollgate_turns (owner, created_at DESC, turn_id DESC);
`

function hasColumn (db: Database.Database, table: string, column: string): boolean {
  return (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).some((c) => c.name === column)
}

/** Schema 1 had no listing columns: add them, filled from each row's document. */
function upgradeFrom1 (db: Database.Database): void {
  if (!hasColumn(db, 'tollgate_sessions', 'updated_at')) {
    db.exec('ALTER TABLE tollgate_sessions ADD COLUMN updated_at TEXT')
    db.exec('UPDATE tollgate_sessions SET updated_at = json_extract(doc, \'$.updated_at\')')
  }
  if (!hasColumn(db, 'tollgate_turns', 'created_at')) {
    db.exec('ALTER TABLE tollgate_turns ADD COLUMN created_at TEXT')
    db.exec('UPDATE tollgate_turns SET created_at = json_extract(doc, \'$.created_at\')')
  }
}

/**
 * Before schema 4 a session id was unique across tenants: the table is rebuilt keyed by tenant
 * and id (SQLite cannot change a primary key in place), each row's tenant read from its owner
 * (`tenant/sub`, as core/tenancy.ts reads it). One transaction: a failure leaves the old table.
 */
function upgradeFrom3 (db: Database.Database): void {
  if (hasColumn(db, 'tollgate_sessions', 'tenant')) return
  db.transaction(() => {
    db.exec(sessionsTable('tollgate_sessions_v4'))
    db.exec(`INSERT INTO tollgate_sessions_v4 (tenant, session_id, owner, doc, updated_at)
      SELECT CASE WHEN instr(owner, '/') > 0 THEN substr(owner, 1, instr(owner, '/') - 1) ELSE owner END,
        session_id, owner, doc, updated_at
      FROM tollgate_sessions`)
    db.exec('DROP TABLE tollgate_sessions')
    db.exec('ALTER TABLE tollgate_sessions_v4 RENAME TO tollgate_sessions')
  })()
}

/**
 * Before schema 5 every row was one event: the column a delta run keeps its last seq in is added,
 * null on those rows (which is what a row of one event other than a delta holds).
 */
function upgradeFrom4 (db: Database.Database): void {
  if (!hasColumn(db, 'tollgate_events', 'last_seq')) db.exec('ALTER TABLE tollgate_events ADD COLUMN last_seq INTEGER')
}

/**
 * Before schema 8 the delta log's ids were AUTOINCREMENT: the table is made again without it
 * (sqlite-delta-log.ts), its rows kept as they are for the fold that follows at open.
 */
function upgradeFrom7 (db: Database.Database): void {
  const table = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'tollgate_delta_log'").get() as { sql: string } | undefined
  if (table === undefined || !/AUTOINCREMENT/i.test(table.sql)) return
  db.transaction(() => {
    db.exec('ALTER TABLE tollgate_delta_log RENAME TO tollgate_delta_log_7')
    db.exec(DELTA_LOG_TABLE)
    db.exec('INSERT INTO tollgate_delta_log (id, turn_id, seq, last_seq, doc) SELECT id, turn_id, seq, last_seq, doc FROM tollgate_delta_log_7')
    db.exec('DROP TABLE tollgate_delta_log_7')
  })()
}

export interface SqliteStoreOptions {
  path: string
  instanceId: string
  /** Period of the PASSIVE WAL checkpoint (default CHECKPOINT_MS); 0 runs none (tests only). */
  checkpointMs?: number
  /** WAL frames from which a checkpoint is finished on this connection (default CATCH_UP_FRAMES). */
  catchUpFrames?: number
  /** Told of a failed checkpoint (the WAL keeps its frames, the next one retries); default: ignored. */
  onCheckpointError?: (err: unknown) => void
  /**
   * Told of each failed compaction (the turn's rows stay as written and read the same; retried a
   * few times, then at the next start); default: ignored.
   */
  onCompactionError?: (err: unknown) => void
  /** Delay before a failed compaction's first retry (COMPACT_RETRY_MS by default; tests lower it). */
  compactRetryMs?: number
  /** Instrumentation (benchmark, tests); none by default. */
  probe?: SqlProbe
  /** Delta log rows a turn may hold behind it before they are copied keyed (PIN_ROWS by default; tests lower it). */
  deltaLogPinRows?: number
  /** Delta log rows one compaction pass cuts at most (CUT_ROWS by default; tests lower it). */
  deltaLogCutRows?: number
  /** What each stored event announces (notifications); none by default. */
  planner?: OutboxPlanner
}

const IN_USE = 'is in use by another gateway process (one process per database file; use PostgreSQL for many instances)'

/**
 * Takes the file's owner lock: an exclusive lock on `<path>-lock`, held until the connection
 * closes (or the process dies: the OS drops it), which a second process cannot take.
 */
function lockOwner (path: string): Database.Database {
  const lock = new Database(`${path}-lock`, { timeout: 1000 })
  try {
    // Nothing is ever written to it: no journal file beside it.
    lock.pragma('journal_mode = MEMORY')
    lock.pragma('locking_mode = EXCLUSIVE')
    lock.exec('BEGIN EXCLUSIVE; COMMIT')
  } catch (err) {
    lock.close()
    if ((err as { code?: string }).code === 'SQLITE_BUSY') throw new Error(`the SQLite database ${path} ${IN_USE}`, { cause: err })
    throw err
  }
  return lock
}

function open (path: string, probe: SqlProbe | undefined): Database.Database {
  // eslint-disable-next-line prefer-const -- the probe's closure reads it; assigned once the handle exists
  let db: Database.Database | undefined
  const verbose = probe === undefined ? undefined : (sql: unknown) => { probe.statement(String(sql), db?.inTransaction === true) }
  db = new Database(path, { timeout: 1000, ...(verbose === undefined ? {} : { verbose }) })
  try {
    // Free pages can be given back (`reclaimFreePages`): deleted events (a finished turn's deltas
    // compacted into runs, retention's pruning) would otherwise keep the file at its largest. It
    // takes effect only on a new file; an existing one keeps its mode until a VACUUM.
    db.pragma('auto_vacuum = INCREMENTAL')
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = NORMAL')
    db.pragma('wal_autocheckpoint = 0')
    db.pragma(`cache_size = -${CACHE_KIB}`)
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`)
    const version = db.pragma('user_version', { simple: true }) as number
    if (version > SCHEMA_VERSION) throw new Error(`the SQLite database ${path} was written by a newer Tollgate (schema ${version})`)
    db.exec(SCHEMA)
    upgradeFrom1(db)
    upgradeFrom3(db)
    upgradeFrom4(db)
    upgradeFrom7(db)
    db.exec(LIST_INDEXES)
    db.pragma(`user_version = ${SCHEMA_VERSION}`)
  } catch (err) {
    db.close()
    throw err
  }
  return db
}

/** A turn's creation waiting for the end of the tick, its rows made when it was asked for. */
interface Creation {
  turn: unknown[]
  session: unknown[]
  claim: IdempotencyClaim | null
  events: readonly BusEnvelope[]
  checkpoint: CheckpointRow | null
  resolve: (held: IdempotencyRecord | null) => void
  reject: (err: unknown) => void
}

/** What a newly stored event adds to the outbox, written in the event's transaction. */
type AnnounceEvent = (event: BusEnvelope) => void

function prepare (db: Database.Database, announce: AnnounceEvent | null, log: DeltaLog) {
  const saveTurn = db.prepare(`INSERT INTO tollgate_turns (turn_id, session_id, owner, status, instance_id, finished_ms, doc, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (turn_id) DO UPDATE SET status = excluded.status, finished_ms = excluded.finished_ms, doc = excluded.doc
      WHERE tollgate_turns.status = 'running'`)
  const saveSession = db.prepare(`INSERT INTO tollgate_sessions (tenant, session_id, owner, doc, updated_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (tenant, session_id) DO UPDATE SET owner = excluded.owner, doc = excluded.doc, updated_at = excluded.updated_at`)
  // An expired claim is taken over in place; an unexpired one is left alone (no row changes).
  const claim = db.prepare(`INSERT INTO tollgate_idempotency (owner, idem_key, turn_id, fingerprint, expires_ms) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (owner, idem_key) DO UPDATE
      SET turn_id = excluded.turn_id, fingerprint = excluded.fingerprint, expires_ms = excluded.expires_ms
      WHERE tollgate_idempotency.expires_ms <= ?`)
  const getIdempotency = db.prepare<[string, string, number], { turn_id: string, fingerprint: string }>(
    'SELECT turn_id, fingerprint FROM tollgate_idempotency WHERE owner = ? AND idem_key = ? AND expires_ms > ?')
  const appendEvent = db.prepare('INSERT OR IGNORE INTO tollgate_events (turn_id, seq, last_seq, doc) VALUES (?, ?, ?, ?)')
  const storedLast = db.prepare<[string, number], { last: number }>(
    'SELECT coalesce(last_seq, seq) AS last FROM tollgate_events WHERE turn_id = ? AND seq = ?')
  // A run of deltas is one row (delta-runs.ts). An event already stored is kept; it announced what
  // it announces when it was first written. A run whose first seq is stored (written again with
  // more pieces than before) keeps that row, and its pieces after it land as a row of their own.
  // `viaLog`: a running turn's delta rows after its first go to the delta log (sqlite-delta-log.ts).
  const appendRow = (row: RowOfEvents, viaLog: boolean): void => {
    if (viaLog && row.last_seq !== null && log.append(row)) return
    if (appendEvent.run(row.turn_id, row.seq, row.last_seq, packDoc(row.doc)).changes === 1) {
      if (announce !== null) for (const e of row.events) announce(e)
      if (viaLog && row.last_seq !== null) log.opened(row.turn_id, row.last_seq)
      return
    }
    if (row.events.length === 1) return
    const last = storedLast.get(row.turn_id, row.seq)?.last ?? row.seq
    for (const rest of toRows(row.events.filter((e) => e.seq > last))) appendRow(rest, viaLog)
  }
  const appendAll = (events: readonly BusEnvelope[], viaLog = false): void => {
    for (const row of toRows(events)) appendRow(row, viaLog)
  }
  // A finished turn's delta rows and its last event (the terminal one).
  const compactable = db.prepare<[string, string], { seq: number, last_seq: number | null, doc: string | Buffer }>(`SELECT seq, last_seq, doc
      FROM tollgate_events WHERE turn_id = ?
      AND (last_seq IS NOT NULL OR seq = (SELECT max(seq) FROM tollgate_events WHERE turn_id = ?)) ORDER BY seq`)
  const turnDoc = db.prepare<[string], { doc: string | Buffer }>('SELECT doc FROM tollgate_turns WHERE turn_id = ?')
  const removeRow = db.prepare('DELETE FROM tollgate_events WHERE turn_id = ? AND seq = ? AND last_seq = ?')
  const rewriteRow = db.prepare('UPDATE tollgate_events SET doc = ? WHERE turn_id = ? AND seq = ?')
  const queueCompaction = db.prepare('INSERT OR IGNORE INTO tollgate_compactions (turn_id) VALUES (?)')
  const compacted = db.prepare('DELETE FROM tollgate_compactions WHERE turn_id = ?')
  // A finished turn's checkpoint is never read again (pruneCheckpoints would drop it within the hour).
  const dropCheckpoint = db.prepare('DELETE FROM tollgate_checkpoints WHERE turn_id = ?')
  /**
   * A finished turn's delta rows, written a flush at a time, become one row per run, its text kept
   * once, in its record (delta-runs.ts); it leaves the queue of turns to compact. The events are
   * the same: announced already, they announce nothing. A savepoint per turn, inside the pass's
   * one transaction: a turn that fails is undone alone; a crash leaves the pass's turns queued
   * with the rows as written, which read back the same.
   */
  const compactTurn = db.transaction((turnId: string): void => {
    const record = turnDoc.get(turnId)
    const text = record === undefined ? null : decodeTurn(unpackDoc(record.doc)).final_text ?? null
    const rows = compactable.all(turnId, turnId).map((r) => ({ seq: r.seq, last_seq: r.last_seq, doc: unpackDoc(r.doc) }))
    const { remove, insert, rewrite } = compact(rows, text, log.events(turnId))
    for (const r of remove) removeRow.run(turnId, r.seq, r.last_seq)
    for (const r of insert) appendEvent.run(r.turn_id, r.seq, r.last_seq, packDoc(r.doc))
    for (const r of rewrite) rewriteRow.run(packDoc(r.doc), turnId, r.seq)
    dropCheckpoint.run(turnId)
    compacted.run(turnId)
    log.forget(turnId)
  })
  /** A turn's record and its session, written together (in the caller's transaction). */
  const saveBoth = (turn: unknown[], session: unknown[]): void => {
    saveTurn.run(...turn)
    saveSession.run(...session)
  }
  // A later checkpoint replaces an earlier one, never the other way round.
  const saveCheckpoint = db.prepare(`INSERT INTO tollgate_checkpoints (turn_id, seq, doc) VALUES (?, ?, ?)
      ON CONFLICT (turn_id) DO UPDATE SET seq = excluded.seq, doc = excluded.doc WHERE excluded.seq >= tollgate_checkpoints.seq`)
  const createTurn = db.transaction((
    turn: unknown[], session: unknown[], c: IdempotencyClaim | null, now: number, events: readonly BusEnvelope[],
    checkpoint: CheckpointRow | null
  ): IdempotencyRecord | null => {
    if (c !== null && claim.run(c.owner, c.key, turn[0], c.fingerprint, c.expiresMs, now).changes === 0) {
      const held = getIdempotency.get(c.owner, c.key, now)
      // Only an unexpired claim blocks the insert, and nothing else writes in between.
      if (held !== undefined) return { turnId: held.turn_id, fingerprint: held.fingerprint }
    }
    saveBoth(turn, session)
    appendAll(events)
    if (checkpoint !== null) saveCheckpoint.run(checkpoint.turn_id, checkpoint.seq, checkpoint.doc)
    return null
  })
  const interruptTurn = db.prepare('UPDATE tollgate_turns SET status = ?, finished_ms = ?, doc = ? WHERE turn_id = ? AND status = \'running\' AND instance_id IS ?')
  return {
    saveTurn,
    saveSession,
    // Transaction functions are built once: better-sqlite3 wraps a new one on every call otherwise.
    // A finished turn is queued for compaction (SqliteStore.compactSome), in the transaction that finishes it.
    saveTurnAndSession: db.transaction((turn: unknown[], session: unknown[], events: readonly BusEnvelope[], compactLater: boolean) => {
      saveBoth(turn, session)
      appendAll(events)
      if (compactLater) queueCompaction.run(turn[0])
    }),
    getIdempotency,
    pruneIdempotency: db.prepare('DELETE FROM tollgate_idempotency WHERE expires_ms <= ?'),
    createTurn,
    // Each creation in a savepoint of its own (better-sqlite3 nests transaction functions so): one
    // that fails is undone alone, the others commit together.
    createTurns: db.transaction((batch: readonly Creation[], now: number): Array<{ held: IdempotencyRecord | null } | { err: unknown }> =>
      batch.map((c) => {
        try {
          return { held: createTurn(c.turn, c.session, c.claim, now, c.events, c.checkpoint) }
        } catch (err) {
          return { err }
        }
      })),
    appendEvents: db.transaction((
      events: readonly BusEnvelope[], checkpoints: readonly CheckpointRow[], finished: ReadonlyArray<[unknown[], unknown[], boolean]>,
      records: ReadonlyArray<unknown[]>, joined: () => void, viaLog: boolean
    ) => {
      joined()
      appendAll(events, viaLog)
      for (const c of checkpoints) saveCheckpoint.run(c.turn_id, c.seq, c.doc)
      for (const turn of records) saveTurn.run(...turn)
      for (const [turn, session, compactLater] of finished) {
        saveBoth(turn, session)
        if (compactLater) queueCompaction.run(turn[0])
      }
    }),
    readCheckpoint: db.prepare<[string], CheckpointRow>('SELECT turn_id, seq, doc FROM tollgate_checkpoints WHERE turn_id = ?'),
    pruneCheckpoints: db.prepare(`DELETE FROM tollgate_checkpoints WHERE turn_id NOT IN
      (SELECT turn_id FROM tollgate_turns WHERE status = 'running')`),
    adoptTurn: db.prepare('UPDATE tollgate_turns SET instance_id = ? WHERE turn_id = ? AND status = \'running\' AND instance_id IS ?'),
    checkpoint: db.prepare<[], { busy: number, log: number, checkpointed: number }>('PRAGMA wal_checkpoint(PASSIVE)'),
    getSession: db.prepare<[string, string], { doc: string | Buffer }>('SELECT doc FROM tollgate_sessions WHERE tenant = ? AND session_id = ?'),
    getTurn: turnDoc,
    // Keyset pages: strictly after the previous page's last (time, id); the first page passes FIRST_PAGE.
    listSessions: db.prepare<[string, string, string, string, number], { doc: string | Buffer }>(`SELECT doc FROM tollgate_sessions
      WHERE owner = ? AND (updated_at < ? OR (updated_at = ? AND session_id < ?)) ORDER BY updated_at DESC, session_id DESC LIMIT ?`),
    listTurns: db.prepare<[string, string | null, string | null, string, string, string, number], { doc: string | Buffer }>(`SELECT doc
      FROM tollgate_turns
      WHERE owner = ? AND session_id = coalesce(?, session_id) AND status = coalesce(?, status)
        AND (created_at < ? OR (created_at = ? AND turn_id < ?)) ORDER BY created_at DESC, turn_id DESC LIMIT ?`),
    // The rows holding events after the second argument: a run that does starts at most MAX_RUN
    // seqs before it (the first bound keeps the read on the key).
    readEvents: db.prepare<[string, number, number, number], { seq: number, last_seq: number | null, doc: string | Buffer }>(`SELECT seq, last_seq, doc FROM tollgate_events
      WHERE turn_id = ? AND seq > ? AND coalesce(last_seq, seq) > ? ORDER BY seq LIMIT ?`),
    // The rows that may end last: those starting within a run's length of the last start.
    lastEventSeq: db.prepare<[string, string], { seq: number | null }>(`SELECT max(coalesce(last_seq, seq)) AS seq FROM tollgate_events
      WHERE turn_id = ? AND seq > (SELECT max(seq) FROM tollgate_events WHERE turn_id = ?) - ${MAX_RUN}`),
    pruneEvents: db.prepare('DELETE FROM tollgate_events WHERE turn_id IN (SELECT turn_id FROM tollgate_turns WHERE finished_ms IS NOT NULL AND finished_ms < ?)'),
    // Only rows whose compaction failed: a finished turn leaves the log when it is compacted.
    pruneDeltaLog: db.prepare<[number], { turn_id: string }>(`DELETE FROM tollgate_delta_log
      WHERE turn_id IN (SELECT turn_id FROM tollgate_turns WHERE finished_ms IS NOT NULL AND finished_ms < ?) RETURNING turn_id`),
    pruneLeases: db.prepare('DELETE FROM tollgate_instances WHERE expires_ms < ?'),
    renewLease: db.prepare('INSERT INTO tollgate_instances (instance_id, expires_ms) VALUES (?, ?) ON CONFLICT (instance_id) DO UPDATE SET expires_ms = excluded.expires_ms'),
    releaseLease: db.prepare('DELETE FROM tollgate_instances WHERE instance_id = ?'),
    liveInstances: db.prepare<[number], { instance_id: string }>('SELECT instance_id FROM tollgate_instances WHERE expires_ms > ?'),
    runningTurns: db.prepare<[], { turn_id: string, instance_id: string | null }>('SELECT turn_id, instance_id FROM tollgate_turns WHERE status = \'running\''),
    // A turn interrupted for a dead instance is finished too: it is queued for compaction with the record.
    interruptTurn: db.transaction((turn: unknown[], instanceId: string | null): boolean => {
      const won = interruptTurn.run(...turn, instanceId).changes === 1
      if (won) queueCompaction.run(turn[3])
      return won
    }),
    // Queued turns, oldest first, until `budgetMs` has passed (a turn started is finished), then a
    // cut of the delta log (CUT_ROWS at most); returns whether the log has rows left to cut. Each
    // turn taken goes to `taken`, and each that failed to `onError`.
    compactPass: db.transaction((
      queue: Set<string>, budgetMs: number, taken: string[], onError: (turnId: string, err: unknown) => void
    ): boolean => {
      const start = performance.now()
      for (const turnId of queue) {
        queue.delete(turnId)
        taken.push(turnId)
        try {
          compactTurn(turnId)
        } catch (err) {
          onError(turnId, err)
        }
        if (performance.now() - start >= budgetMs) break
      }
      return log.trim()
    }),
    queuedCompactions: db.prepare<[], { turn_id: string }>('SELECT turn_id FROM tollgate_compactions')
  }
}

type Statements = ReturnType<typeof prepare>

function sessionRow (session: SessionRecord): unknown[] {
  return [tenantOf(session.owner), session.session_id, session.owner, packDoc(encodeDoc(session)), session.updated_at]
}

export class SqliteStore implements Store {
  readonly instanceId: string
  readonly exclusive = true
  readonly durable = true
  readonly spend: SpendLedger
  readonly schedules: ScheduleBook
  readonly outbox: SqliteOutbox
  private readonly db: Database.Database
  private readonly stmt: Statements
  private readonly probe: SqlProbe | undefined
  private readonly lock: Database.Database
  private readonly checkpointer: WalCheckpointer | null
  /** Writes that ride on the next event-log commit (the audit chain's entries). */
  private readonly commits: SharedCommit
  private readonly onCompactionError: (err: unknown) => void
  /** Finished turns whose rows are not compacted yet, oldest first (also in `tollgate_compactions`). */
  private readonly toCompact = new Set<string>()
  /** Deltas written per running turn: whether its compaction is worth a pass. */
  private readonly streamed = new StreamedDeltas()
  /** Running turns' later delta rows (sqlite-delta-log.ts). */
  private readonly log: DeltaLog
  private compactTimer: NodeJS.Timeout | null = null
  /** The last pass left delta log rows to cut (CUT_ROWS a pass): passes go on until it has not. */
  private cutPending = false
  /** Callers of `compacted()` waiting for the queue to empty. */
  private compactedWaiters: Array<() => void> = []
  /** Failed compactions waiting to be tried again (close() tries them once more; what fails again stays queued in the file). */
  private readonly retries: CompactionRetries

  constructor (options: SqliteStoreOptions) {
    this.instanceId = options.instanceId
    this.probe = options.probe
    const path = resolve(options.path)
    mkdirSync(dirname(path), { recursive: true })
    this.lock = lockOwner(path)
    try {
      this.db = open(path, options.probe)
    } catch (err) {
      this.lock.close()
      throw err
    }
    this.outbox = new SqliteOutbox(this.db)
    this.commits = new SharedCommit(this.db)
    const { planner } = options
    const outbox = this.outbox
    const announce = planner === undefined ? null : (e: BusEnvelope): void => { outbox.write(planner(e)) }
    this.log = new DeltaLog(this.db, announce, options.deltaLogPinRows, options.deltaLogCutRows)
    try {
      // What a crash (or a stop, of turns still running) left in the delta log reads back the same keyed.
      this.log.fold()
    } catch (err) {
      this.db.close()
      this.lock.close()
      throw err
    }
    this.stmt = prepare(this.db, announce, this.log)
    this.spend = new SqliteSpendLedger(this.db)
    this.schedules = new SqliteScheduleBook(this.db)
    const every = options.checkpointMs ?? CHECKPOINT_MS
    this.checkpointer = every === 0
      ? null
      : new WalCheckpointer({
        path,
        periodMs: every,
        catchUpFrames: options.catchUpFrames ?? CATCH_UP_FRAMES,
        checkpointHere: () => this.copyWal(),
        onResult: (result) => { this.probe?.checkpoint(result.walFrames, result.checkpointed) },
        onError: options.onCheckpointError ?? (() => {})
      })
    this.onCompactionError = options.onCompactionError ?? (() => {})
    this.retries = new CompactionRetries(options.compactRetryMs ?? COMPACT_RETRY_MS, (turnId) => {
      if (this.db.open) this.queueCompaction(turnId)
      this.tellCompacted()
    })
    // Turns finished before a crash (or a stop that could not compact them) are compacted now.
    for (const { turn_id: turnId } of this.stmt.queuedCompactions.all()) this.queueCompaction(turnId)
  }

  /**
   * Compaction happens off the finishing transaction: a batch of streams that end together would
   * otherwise compact every turn in the same few ticks, in the way of the streams still running.
   * A turn is queued (in memory, and in `tollgate_compactions` by the transaction that finished
   * it); passes start COMPACT_DELAY_MS later and run COMPACT_SLICE_MS at most, COMPACT_GAP_MS
   * apart, until the queue is empty; close() compacts what is left.
   */
  private queueCompaction (turnId: string): void {
    this.toCompact.add(turnId)
    this.compactTimer ??= this.compactLater(COMPACT_DELAY_MS)
  }

  private compactLater (ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.compactTimer = null
      this.compactSome(COMPACT_SLICE_MS)
      if (this.toCompact.size > 0 || this.cutPending) this.compactTimer = this.compactLater(COMPACT_GAP_MS)
      else this.tellCompacted()
    }, ms)
    if (this.compactedWaiters.length === 0) timer.unref()
    return timer
  }

  /**
   * Compacts queued turns, oldest first, until `budgetMs` has passed (each turn at least started
   * is finished). A turn that failed (undone alone), or every turn of a pass whose commit failed,
   * stays queued in the file and is tried again later (`CompactionRetries`).
   */
  private compactSome (budgetMs: number): void {
    if (!this.db.open || (this.toCompact.size === 0 && !this.cutPending)) return
    const taken: string[] = []
    const failed = new Set<string>()
    let committed = true
    try {
      this.cutPending = this.stmt.compactPass(this.toCompact, budgetMs, taken, (turnId, err) => {
        failed.add(turnId)
        this.onCompactionError(err)
      })
      this.log.settle()
    } catch (err) {
      this.log.discard()
      this.onCompactionError(err)
      committed = false
    }
    // A full disk or a busy file passes: a failed turn is queued again a little later.
    for (const turnId of taken) {
      if (!committed || failed.has(turnId)) this.retries.failed(turnId, this.compactedWaiters.length > 0)
      else this.retries.succeeded(turnId)
    }
  }

  /**
   * Resolves once no finished turn waits for its compaction or a retry of it, and the delta log
   * is cut as far as it can be (the benchmark reads the CPU spent after it; tests wait on it).
   */
  async compacted (): Promise<void> {
    if (this.toCompact.size === 0 && !this.retries.pending && !this.cutPending) return
    // Someone waits: the passes and retries keep the process alive until then.
    this.compactTimer?.ref()
    this.retries.keepAlive()
    await new Promise<void>((resolve) => { this.compactedWaiters.push(resolve) })
  }

  private tellCompacted (): void {
    if (this.toCompact.size > 0 || this.retries.pending || this.cutPending || this.compactedWaiters.length === 0) return
    const waiters = this.compactedWaiters
    this.compactedWaiters = []
    for (const resolve of waiters) resolve()
  }

  /** Whether the finished `turn` is worth compacting (a turn that still has delta log rows always is); forgets its count. */
  private worthCompacting (turn: TurnRecord): boolean {
    return this.streamed.worthCompacting(turn.turn_id, turn.final_text) || this.log.holds(turn.turn_id)
  }

  /** The tenants' audit chains in this file, their appends sharing the event log's commits (decision 0277). */
  auditLedger (): AuditLedger {
    return new SqliteAuditLedger({ db: this.db, commits: this.commits })
  }

  /** Copies the WAL's frames into the database file without waiting for anything (PASSIVE). */
  checkpoint (): { walFrames: number, checkpointed: number } {
    const result = this.copyWal()
    this.probe?.checkpoint(result.walFrames, result.checkpointed)
    return result
  }

  private copyWal (): { walFrames: number, checkpointed: number } {
    const row = this.stmt.checkpoint.get()
    return { walFrames: row?.log ?? 0, checkpointed: row?.checkpointed ?? 0 }
  }

  async getSession (tenant: string, sessionId: string): Promise<SessionRecord | null> {
    const row = this.stmt.getSession.get(tenant, sessionId)
    return row === undefined ? null : decodeSession(unpackDoc(row.doc))
  }

  async saveSession (session: SessionRecord): Promise<void> {
    this.stmt.saveSession.run(...sessionRow(session))
  }

  async listSessions (owner: string, limit: number, before: PageKey = FIRST_PAGE): Promise<SessionRecord[]> {
    return this.stmt.listSessions.all(owner, before.at, before.at, before.id, limit).map((r) => decodeSession(unpackDoc(r.doc)))
  }

  async listTurns (owner: string, filter: TurnFilter, limit: number, before: PageKey = FIRST_PAGE): Promise<TurnRecord[]> {
    return this.stmt.listTurns.all(owner, filter.sessionId ?? null, filter.status ?? null, before.at, before.at, before.id, limit)
      .map((r) => decodeTurn(unpackDoc(r.doc)))
  }

  async getTurn (turnId: string): Promise<TurnRecord | null> {
    const row = this.stmt.getTurn.get(turnId)
    return row === undefined ? null : decodeTurn(unpackDoc(row.doc))
  }

  async saveTurn (turn: TurnRecord): Promise<void> {
    this.stmt.saveTurn.run(...this.turnRow(turn))
  }

  async saveTurnAndSession (turn: TurnRecord, session: SessionRecord, events: readonly BusEnvelope[] = []): Promise<void> {
    this.streamed.count(events)
    const compactLater = TERMINAL_TURN_STATUSES.has(turn.status) && this.worthCompacting(turn)
    this.stmt.saveTurnAndSession(this.turnRow(turn), sessionRow(session), events, compactLater)
    if (compactLater) this.queueCompaction(turn.turn_id)
    else if (TERMINAL_TURN_STATUSES.has(turn.status)) this.log.forget(turn.turn_id)
  }

  /**
   * Written at the end of the tick with the other turns created in it, in one transaction (each
   * in a savepoint of its own): under load a commit per tick instead of one per turn. The rows are
   * made now, from the records as they are when the caller asks.
   */
  async createTurn (
    turn: TurnRecord, session: SessionRecord, claim: IdempotencyClaim | null, events: readonly BusEnvelope[] = [],
    checkpoint: CheckpointRow | null = null
  ): Promise<IdempotencyRecord | null> {
    const rows = { turn: this.turnRow(turn), session: sessionRow(session), claim, events, checkpoint }
    return await new Promise((resolve, reject) => {
      this.creations.push({ ...rows, resolve, reject })
      if (this.creations.length === 1) setImmediate(this.createQueued)
    })
  }

  private creations: Creation[] = []

  private readonly createQueued = (): void => {
    const batch = this.creations
    if (batch.length === 0) return
    this.creations = []
    const now = Date.now()
    if (batch.length === 1) {
      const [c] = batch as [Creation]
      try {
        c.resolve(this.stmt.createTurn(c.turn, c.session, c.claim, now, c.events, c.checkpoint))
      } catch (err) {
        c.reject(err)
      }
      return
    }
    let outcomes
    try {
      outcomes = this.stmt.createTurns(batch, now)
    } catch (err) {
      for (const c of batch) c.reject(err)
      return
    }
    batch.forEach((c, i) => {
      const outcome = outcomes[i] as { held: IdempotencyRecord | null } | { err: unknown }
      if ('err' in outcome) c.reject(outcome.err)
      else c.resolve(outcome.held)
    })
  }

  async getIdempotency (owner: string, key: string): Promise<IdempotencyRecord | null> {
    const row = this.stmt.getIdempotency.get(owner, key, Date.now())
    return row === undefined ? null : { turnId: row.turn_id, fingerprint: row.fingerprint }
  }

  async pruneIdempotency (nowMs: number): Promise<void> {
    this.stmt.pruneIdempotency.run(nowMs)
  }

  private turnRow (turn: TurnRecord): unknown[] {
    const doc = packDoc(encodeDoc(turn))
    return [turn.turn_id, turn.session_id, turn.owner, turn.status, this.instanceId, finishedMs(turn), doc, turn.created_at]
  }

  /**
   * The journal's writer retrying, or writing behind a backlog: its rows go keyed, never to the
   * delta log, so that a turn finished meanwhile (its record saved on its own) gets no log rows
   * that nothing would compact or forget.
   */
  async appendEvents (events: readonly BusEnvelope[], checkpoints: readonly CheckpointRow[] = []): Promise<void> {
    this.appendGroup(events, checkpoints, [], [], false)
  }

  /** The journal's group write, the hot path: a running turn's later delta rows go to the delta log. */
  appendEventsNow (
    events: readonly BusEnvelope[], checkpoints: readonly CheckpointRow[] = [], finished: readonly FinishedTurn[] = [],
    records: readonly TurnRecord[] = []
  ): void {
    this.appendGroup(events, checkpoints, finished, records, true)
  }

  private appendGroup (
    events: readonly BusEnvelope[], checkpoints: readonly CheckpointRow[], finished: readonly FinishedTurn[],
    records: readonly TurnRecord[], viaLog: boolean
  ): void {
    this.streamed.count(events)
    const finishedRows = finished.map((f): [unknown[], unknown[], boolean] =>
      [this.turnRow(f.turn), sessionRow(f.session), this.worthCompacting(f.turn)])
    const recordRows = records.map((turn) => this.turnRow(turn))
    try {
      this.commits.within((joined) => { this.stmt.appendEvents(events, checkpoints, finishedRows, recordRows, joined, viaLog) })
      this.log.settle()
    } catch (err) {
      this.log.discard()
      throw err
    }
    for (const [i, f] of finished.entries()) {
      if (finishedRows[i]?.[2] === true) this.queueCompaction(f.turn.turn_id)
      else this.log.forget(f.turn.turn_id)
    }
  }

  async readCheckpoint (turnId: string): Promise<CheckpointRow | null> {
    return this.stmt.readCheckpoint.get(turnId) ?? null
  }

  async pruneCheckpoints (): Promise<void> {
    this.stmt.pruneCheckpoints.run()
  }

  async adoptTurn (turnId: string, instanceId: string | null): Promise<boolean> {
    return this.stmt.adoptTurn.run(this.instanceId, turnId, instanceId).changes === 1
  }

  async readEvents (turnId: string, afterSeq: number, limit: number): Promise<BusEnvelope[]> {
    return await readExpanded(
      (after, n) => this.eventRows(turnId, after, n),
      afterSeq, limit, async () => (await this.getTurn(turnId))?.final_text ?? null)
  }

  /** The turn's rows holding events after `after`, `limit` at most, in seq order: keyed ones and the delta log's. */
  private eventRows (turnId: string, after: number, limit: number): StoredRow[] {
    const keyed = this.stmt.readEvents.all(turnId, after - MAX_RUN, after, limit).map((r) => ({ ...r, doc: unpackDoc(r.doc) }))
    if (!this.log.holds(turnId)) return keyed
    const rows = [...keyed, ...this.log.rows(turnId, after, limit)].sort((a, b) => a.seq - b.seq)
    // A row another one covers whole (written keyed by a caller's own transaction too) is read
    // once; one that overlaps in part stays (expanding rows skips the seqs already given).
    let end = Number.NEGATIVE_INFINITY
    return rows.filter((r) => {
      const last = r.last_seq ?? r.seq
      if (last <= end) return false
      end = last
      return true
    }).slice(0, limit)
  }

  async lastEventSeq (turnId: string): Promise<number> {
    return Math.max(this.stmt.lastEventSeq.get(turnId, turnId)?.seq ?? 0, this.log.lastSeq(turnId))
  }

  async prune (finishedBeforeMs: number): Promise<void> {
    this.stmt.pruneEvents.run(finishedBeforeMs)
    // The log remembers each row's events (compaction takes them from there): a pruned turn's go too.
    for (const { turn_id: turnId } of this.stmt.pruneDeltaLog.all(finishedBeforeMs)) this.log.forget(turnId)
    this.stmt.pruneLeases.run(Date.now() - LEASE_FORGET_MS)
    this.reclaimFreePages()
  }

  /**
   * Gives free pages back to the file system, at most RECLAIM_PAGES at a time so a stop or a
   * prune stays short (an incremental vacuum moves pages from the end of the file into the gaps).
   * A file made before auto_vacuum was set has no free-page map and is left as it is.
   */
  private reclaimFreePages (): void {
    if (!this.db.open) return
    this.db.pragma(`incremental_vacuum(${RECLAIM_PAGES})`)
  }

  async renewLease (ttlMs: number): Promise<void> {
    this.stmt.renewLease.run(this.instanceId, Date.now() + ttlMs)
  }

  async releaseLease (): Promise<void> {
    this.stmt.releaseLease.run(this.instanceId)
  }

  async liveInstances (): Promise<string[]> {
    return this.stmt.liveInstances.all(Date.now()).map((r) => r.instance_id)
  }

  async runningTurns (): Promise<RunningTurn[]> {
    return this.stmt.runningTurns.all().map((r) => ({ turnId: r.turn_id, instanceId: r.instance_id }))
  }

  async interruptTurn (turn: TurnRecord, instanceId: string | null): Promise<boolean> {
    const won = this.stmt.interruptTurn([turn.status, finishedMs(turn), packDoc(encodeDoc(turn)), turn.turn_id], instanceId)
    if (won) this.queueCompaction(turn.turn_id)
    return won
  }

  async close (): Promise<void> {
    // Creations asked for before the close are written (or refused), not left unanswered.
    if (this.db.open) this.createQueued()
    // Writes still waiting for a commit to ride on (audit entries) commit on their own.
    this.commits.commitQueued()
    if (this.compactTimer !== null) clearTimeout(this.compactTimer)
    this.compactTimer = null
    // Turns waiting for a retry are tried once more now; what fails again stays queued in the file.
    for (const turnId of this.retries.stop()) this.toCompact.add(turnId)
    // What a graceful stop leaves is compacted: nothing waits for the next start.
    this.compactSome(Number.POSITIVE_INFINITY)
    this.retries.stop()
    this.toCompact.clear()
    // The fold below empties the log: nothing is left to cut.
    this.cutPending = false
    this.tellCompacted()
    // Turns still running (parked for a restart) leave their delta log rows keyed.
    if (this.db.open) this.log.fold()
    await this.checkpointer?.close()
    this.reclaimFreePages()
    if (this.db.open) this.db.close()
    // Last: the file is not free for another process until this connection is done with it.
    if (this.lock.open) this.lock.close()
  }
}
