/**
 * Shared store on PostgreSQL (`pg`): many gateway instances use one database. Leases use the
 * database clock, so instances with skewed clocks still agree on who is alive. Saves of one
 * turn are chained so a pool running queries on several connections cannot reorder them.
 * The hot-path statements are named, so each pooled connection parses and plans them once; a
 * batch of events is one statement whatever its size (arrays unnested), and a turn+session
 * save pair is one statement too (two data-modifying CTE parts, atomic together).
 */
import pg from 'pg'
import { inTransaction } from './pg-transaction.js'
import type { SpendLedger } from './spend-ledger.js'
import { PostgresSpendLedger, spendDdl } from './spend-postgres.js'
import type { ScheduleBook } from './schedule-book.js'
import { PostgresScheduleBook, scheduleDdl } from './schedule-postgres.js'
import { NOTHING, type OutboxPlanner, type OutboxWrite } from './outbox.js'
import { isEmptyWrite, outboxDdl, PostgresOutbox } from './outbox-postgres.js'
import type { BusEnvelope, CheckpointRow } from '../core/envelope.js'
import { sessionKey, tenantOf } from '../core/tenancy.js'
import { decodeSession, decodeTurn, encodeDoc, finishedMs, LEASE_FORGET_MS } from './codec.js'
import { CompactionRetries, COMPACT_RETRY_MS, StreamedDeltas } from './compaction-schedule.js'
import { compact, COMPACT_DELAY_MS, MAX_RUN, readExpanded, toRows, type EventRow, type StoredRow } from './delta-runs.js'
import {
  FIRST_PAGE, type IdempotencyClaim, type IdempotencyRecord, type PageKey, type RunningTurn, type SessionRecord, type Store,
  TERMINAL_TURN_STATUSES, type TurnFilter, type TurnRecord
} from './store.js'

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * The version of the tables in the configured schema, kept in `tollgate_schema` (one row). 1: the
 * first kept, with `tollgate_compactions`; every earlier change (tenant-keyed sessions, listing
 * columns, checkpoints, idempotency keys, delta runs' `last_seq`) is made in place by the DDL. A
 * schema without the table was made by an earlier Tollgate: upgraded in place and stamped. A
 * newer version is refused at start: this build cannot read what a newer one may write.
 */
export const SCHEMA_VERSION = 1

/** Rows of events (a run of deltas one row: delta-runs.ts) as the four arrays the insert unnests. */
function rowColumns (rows: readonly EventRow[]): unknown[] {
  return [rows.map((r) => r.turn_id), rows.map((r) => r.seq), rows.map((r) => r.last_seq), rows.map((r) => r.doc)]
}

function eventColumns (events: readonly BusEnvelope[]): unknown[] {
  return rowColumns(toRows(events))
}

/** Checkpoints as the three arrays their upsert unnests. */
function checkpointColumns (checkpoints: readonly CheckpointRow[]): unknown[] {
  return [checkpoints.map((c) => c.turn_id), checkpoints.map((c) => c.seq), checkpoints.map((c) => c.doc)]
}

/** A session's row values, in the order its upsert takes them. */
function sessionColumns (session: SessionRecord): unknown[] {
  return [tenantOf(session.owner), session.session_id, session.owner, encodeDoc(session), session.updated_at]
}

/** The write chain of a session (see `serial`). */
function sessionChain (session: SessionRecord): string {
  return `s:${sessionKey(tenantOf(session.owner), session.session_id)}`
}

export interface PostgresStoreOptions {
  connectionString: string
  schema: string
  instanceId: string
  maxConnections: number
  connectTimeoutMs: number
  /** Errors of idle pooled connections (the pool replaces them). */
  onIdleError: (err: Error) => void
  /** What each stored event announces (notifications); none by default. */
  planner?: OutboxPlanner
  /**
   * Told of each failed compaction (the turn's rows stay as written and read the same; retried a
   * few times, then at the next start); default: ignored.
   */
  onCompactionError?: (err: unknown) => void
}

/**
 * A sessions table made before session ids were per tenant (keyed by the id alone) is keyed by
 * tenant and id from then on, each row's tenant read from its owner (`tenant/sub`, as
 * core/tenancy.ts reads it). Done once: the new key's name says it is done.
 */
function tenantSessions (s: string): string {
  return `DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint
      WHERE conrelid = '${s}.tollgate_sessions'::regclass AND conname = 'tollgate_sessions_tenant_pkey') THEN
    ALTER TABLE ${s}.tollgate_sessions ADD COLUMN IF NOT EXISTS tenant text;
    UPDATE ${s}.tollgate_sessions SET tenant = split_part(owner, '/', 1) WHERE tenant IS NULL;
    ALTER TABLE ${s}.tollgate_sessions ALTER COLUMN tenant SET NOT NULL, DROP CONSTRAINT tollgate_sessions_pkey,
      ADD CONSTRAINT tollgate_sessions_tenant_pkey PRIMARY KEY (tenant, session_id);
  END IF;
END $$;`
}

function ddl (s: string): string {
  return `
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.tollgate_sessions (
  tenant text NOT NULL,
  session_id text NOT NULL,
  owner text NOT NULL,
  doc text NOT NULL,
  CONSTRAINT tollgate_sessions_tenant_pkey PRIMARY KEY (tenant, session_id)
);
CREATE TABLE IF NOT EXISTS ${s}.tollgate_turns (
  turn_id text PRIMARY KEY,
  session_id text NOT NULL,
  owner text NOT NULL,
  status text NOT NULL,
  instance_id text,
  finished_ms bigint,
  doc text NOT NULL
);
CREATE INDEX IF NOT EXISTS tollgate_turns_running ON ${s}.tollgate_turns (status) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS tollgate_turns_finished ON ${s}.tollgate_turns (finished_ms) WHERE finished_ms IS NOT NULL;
CREATE TABLE IF NOT EXISTS ${s}.tollgate_events (
  turn_id text NOT NULL,
  seq integer NOT NULL,
  doc text NOT NULL,
  PRIMARY KEY (turn_id, seq)
);
-- Delta runs: a row of deltas keeps its last seq here; null on every other row, and on the rows
-- written before runs (each one event, as it was).
ALTER TABLE ${s}.tollgate_events ADD COLUMN IF NOT EXISTS last_seq integer;
CREATE TABLE IF NOT EXISTS ${s}.tollgate_instances (
  instance_id text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
ALTER TABLE ${s}.tollgate_sessions ADD COLUMN IF NOT EXISTS updated_at text COLLATE "C";
ALTER TABLE ${s}.tollgate_turns ADD COLUMN IF NOT EXISTS created_at text COLLATE "C";
UPDATE ${s}.tollgate_sessions SET updated_at = substring(doc from '"updated_at":"([^"]+)"') WHERE updated_at IS NULL;
UPDATE ${s}.tollgate_turns SET created_at = substring(doc from '"created_at":"([^"]+)"') WHERE created_at IS NULL;
CREATE INDEX IF NOT EXISTS tollgate_sessions_by_owner ON ${s}.tollgate_sessions (owner, updated_at DESC, session_id COLLATE "C" DESC);
CREATE INDEX IF NOT EXISTS tollgate_turns_by_owner ON ${s}.tollgate_turns (owner, created_at DESC, turn_id COLLATE "C" DESC);
CREATE TABLE IF NOT EXISTS ${s}.tollgate_checkpoints (
  turn_id text PRIMARY KEY,
  seq integer NOT NULL,
  doc text NOT NULL
);
${tenantSessions(s)}
CREATE TABLE IF NOT EXISTS ${s}.tollgate_idempotency (
  owner text NOT NULL,
  idem_key text NOT NULL,
  turn_id text NOT NULL,
  fingerprint text NOT NULL,
  expires_ms bigint NOT NULL,
  PRIMARY KEY (owner, idem_key)
);
-- Finished turns whose rows wait for compaction: queued by the statement that finishes the turn,
-- removed by the compaction's transaction, so a crash in between leaves the turn to the next start.
CREATE TABLE IF NOT EXISTS ${s}.tollgate_compactions (
  turn_id text PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS ${s}.tollgate_schema (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  version integer NOT NULL
);`
}

function statements (s: string) {
  const upsertTurn = `INSERT INTO ${s}.tollgate_turns (turn_id, session_id, owner, status, instance_id, finished_ms, doc, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (turn_id) DO UPDATE SET status = excluded.status, finished_ms = excluded.finished_ms, doc = excluded.doc
    WHERE ${s}.tollgate_turns.status = 'running'`
  const upsertSession = (a: number): string => `INSERT INTO ${s}.tollgate_sessions (tenant, session_id, owner, doc, updated_at)
    VALUES ($${a}, $${a + 1}, $${a + 2}, $${a + 3}, $${a + 4})
    ON CONFLICT (tenant, session_id) DO UPDATE SET owner = excluded.owner, doc = excluded.doc, updated_at = excluded.updated_at`
  // A row already stored is kept, unless this one is a longer run from the same seq (a write
  // retried, after one that did land, with what queued since): a seq names one event, so the
  // longer row holds the stored events and more.
  const insertEvents = (a: number): string => `INSERT INTO ${s}.tollgate_events AS e (turn_id, seq, last_seq, doc)
    SELECT * FROM unnest($${a}::text[], $${a + 1}::integer[], $${a + 2}::integer[], $${a + 3}::text[])
    ON CONFLICT (turn_id, seq) DO UPDATE SET last_seq = excluded.last_seq, doc = excluded.doc
    WHERE e.last_seq IS NOT NULL AND excluded.last_seq > e.last_seq`
  // A turn's final save queues it for compaction, if (and only if) the save finished it.
  const finishTurn = `${upsertTurn} RETURNING turn_id`
  const queueFinished = `queued AS (INSERT INTO ${s}.tollgate_compactions (turn_id) SELECT turn_id FROM saved_turn ON CONFLICT (turn_id) DO NOTHING)`
  // A later checkpoint replaces an earlier one, never the other way round.
  const upsertCheckpoints = (a: number): string => `INSERT INTO ${s}.tollgate_checkpoints AS c (turn_id, seq, doc)
    SELECT * FROM unnest($${a}::text[], $${a + 1}::integer[], $${a + 2}::text[])
    ON CONFLICT (turn_id) DO UPDATE SET seq = excluded.seq, doc = excluded.doc WHERE excluded.seq >= c.seq`
  return {
    saveTurn: { name: 'tollgate_save_turn', text: upsertTurn },
    saveSession: { name: 'tollgate_save_session', text: upsertSession(1) },
    saveTurnAndSession: { name: 'tollgate_save_turn_and_session', text: `WITH saved_turn AS (${upsertTurn}) ${upsertSession(9)}` },
    // The same with events appended: three data-modifying parts of one statement, atomic together.
    saveTurnSessionAndEvents: {
      name: 'tollgate_save_turn_session_and_events',
      text: `WITH saved_turn AS (${upsertTurn}), saved_events AS (${insertEvents(14)}) ${upsertSession(9)}`
    },
    // The two above as a turn's final save: the turn queued for compaction too, atomic with them.
    finishTurnAndSession: {
      name: 'tollgate_finish_turn_and_session',
      text: `WITH saved_turn AS (${finishTurn}), ${queueFinished} ${upsertSession(9)}`
    },
    finishTurnSessionAndEvents: {
      name: 'tollgate_finish_turn_session_and_events',
      text: `WITH saved_turn AS (${finishTurn}), saved_events AS (${insertEvents(14)}), ${queueFinished} ${upsertSession(9)}`
    },
    // A durable turn's creation: the same with its first checkpoint.
    saveTurnSessionEventsAndCheckpoint: {
      name: 'tollgate_save_turn_session_events_and_checkpoint',
      text: `WITH saved_turn AS (${upsertTurn}), saved_events AS (${insertEvents(14)}),
        saved_checkpoint AS (${upsertCheckpoints(18)}) ${upsertSession(9)}`
    },
    // Keyset pages: strictly after the previous page's last (time, id); the first page passes FIRST_PAGE.
    listSessions: {
      name: 'tollgate_list_sessions',
      text: `SELECT doc FROM ${s}.tollgate_sessions WHERE owner = $1
        AND (updated_at, session_id COLLATE "C") < ($2, $3 COLLATE "C")
        ORDER BY updated_at DESC, session_id COLLATE "C" DESC LIMIT $4`
    },
    listTurns: {
      name: 'tollgate_list_turns',
      text: `SELECT doc FROM ${s}.tollgate_turns WHERE owner = $1
        AND ($2::text IS NULL OR session_id = $2) AND ($3::text IS NULL OR status = $3)
        AND (created_at, turn_id COLLATE "C") < ($4, $5 COLLATE "C")
        ORDER BY created_at DESC, turn_id COLLATE "C" DESC LIMIT $6`
    },
    // An expired claim is taken over in place; an unexpired one (also one committed by another
    // instance while this statement waited on its row lock) is left alone: no row is returned.
    claim: {
      name: 'tollgate_claim_idempotency',
      text: `INSERT INTO ${s}.tollgate_idempotency AS i (owner, idem_key, turn_id, fingerprint, expires_ms) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (owner, idem_key) DO UPDATE
        SET turn_id = excluded.turn_id, fingerprint = excluded.fingerprint, expires_ms = excluded.expires_ms
        WHERE i.expires_ms <= $6 RETURNING turn_id`
    },
    getIdempotency: {
      name: 'tollgate_get_idempotency',
      text: `SELECT turn_id, fingerprint FROM ${s}.tollgate_idempotency WHERE owner = $1 AND idem_key = $2 AND expires_ms > $3`
    },
    appendEvents: { name: 'tollgate_append_events', text: insertEvents(1) },
    // One statement, so one commit: the events, then the checkpoints taken after them.
    appendEventsAndCheckpoints: {
      name: 'tollgate_append_events_and_checkpoints',
      text: `WITH appended AS (${insertEvents(1)}) ${upsertCheckpoints(5)}`
    },
    // The rows holding events after $2: a run that does starts at most MAX_RUN seqs before it.
    readEvents: {
      name: 'tollgate_read_events',
      text: `SELECT seq, last_seq, doc FROM ${s}.tollgate_events
        WHERE turn_id = $1 AND seq > $2::integer - ${MAX_RUN} AND coalesce(last_seq, seq) > $2 ORDER BY seq LIMIT $3`
    },
    // A finished turn's delta rows and its last event (the terminal one).
    compactable: {
      name: 'tollgate_compactable_rows',
      text: `SELECT seq, last_seq, doc FROM ${s}.tollgate_events WHERE turn_id = $1
        AND (last_seq IS NOT NULL OR seq = (SELECT max(seq) FROM ${s}.tollgate_events WHERE turn_id = $1)) ORDER BY seq`
    },
    rewriteRow: { name: 'tollgate_rewrite_event_row', text: `UPDATE ${s}.tollgate_events SET doc = $3 WHERE turn_id = $1 AND seq = $2` },
    removeRows: {
      name: 'tollgate_remove_event_rows',
      text: `DELETE FROM ${s}.tollgate_events e USING unnest($2::integer[], $3::integer[]) AS r (seq, last_seq)
        WHERE e.turn_id = $1 AND e.seq = r.seq AND e.last_seq = r.last_seq`
    },
    insertRows: { name: 'tollgate_insert_event_rows', text: insertEvents(1) },
    // A running turn of a dead instance finished, and queued for compaction, in one statement.
    interruptTurn: {
      name: 'tollgate_interrupt_turn',
      text: `WITH finished AS (UPDATE ${s}.tollgate_turns SET status = $1, finished_ms = $2, doc = $3
          WHERE turn_id = $4 AND status = 'running' AND instance_id IS NOT DISTINCT FROM $5 RETURNING turn_id),
        queued AS (INSERT INTO ${s}.tollgate_compactions (turn_id) SELECT turn_id FROM finished ON CONFLICT (turn_id) DO NOTHING)
        SELECT count(*)::int AS won FROM finished`
    },
    // The compaction's own transaction takes the turn off the queue first: of instances that try
    // the same turn (each queues what it finds at start), one gets the row, the others skip it
    // (also while the first one's transaction is open: SKIP LOCKED).
    claimCompaction: {
      name: 'tollgate_claim_compaction',
      text: `DELETE FROM ${s}.tollgate_compactions WHERE turn_id =
        (SELECT turn_id FROM ${s}.tollgate_compactions WHERE turn_id = $1 FOR UPDATE SKIP LOCKED) RETURNING turn_id`
    },
    turnDoc: { name: 'tollgate_turn_doc', text: `SELECT doc FROM ${s}.tollgate_turns WHERE turn_id = $1` }
  }
}

export class PostgresStore implements Store {
  readonly instanceId: string
  readonly exclusive = false
  readonly durable = true
  readonly spend: SpendLedger
  readonly schedules: ScheduleBook
  readonly outbox: PostgresOutbox
  private readonly planner: OutboxPlanner | null
  private readonly pool: pg.Pool
  /** Quoted schema name, validated: safe to splice into SQL. */
  private readonly s: string
  private readonly chains = new Map<string, Promise<void>>()
  private readonly sql: ReturnType<typeof statements>
  private closed = false
  /**
   * Finished turns whose rows are not compacted yet (each also a row of `tollgate_compactions`),
   * oldest first; `compacting` works through them.
   */
  private readonly toCompact = new Set<string>()
  private compacting: Promise<void> | null = null
  /** The wait before the next compaction pass; `compactNow` ends it (close() does not wait out the delay). */
  private compactTimer: NodeJS.Timeout | null = null
  private compactNow: (() => void) | null = null
  /** Failed compactions waiting to be tried again (close() drops them: their turns stay queued in the table). */
  private readonly retries = new CompactionRetries(COMPACT_RETRY_MS, (turnId) => { this.queueCompaction(turnId) })
  /** Callers of `compacted()` waiting for the queue to empty. */
  private compactedWaiters: Array<() => void> = []
  private readonly onCompactionError: (err: unknown) => void
  /** Deltas written per running turn: whether its compaction is worth it. */
  private readonly streamed = new StreamedDeltas()

  private constructor (pool: pg.Pool, schema: string, options: PostgresStoreOptions) {
    this.pool = pool
    this.s = `"${schema}"`
    this.instanceId = options.instanceId
    this.sql = statements(this.s)
    this.spend = new PostgresSpendLedger(pool, this.s)
    this.schedules = new PostgresScheduleBook(pool, this.s)
    this.outbox = new PostgresOutbox(pool, this.s)
    this.planner = options.planner ?? null
    this.onCompactionError = options.onCompactionError ?? (() => {})
  }

  /**
   * What `events` announce, merged. An event stored before plans the same ids again, which the
   * outbox's insert ignores: nothing is announced twice.
   */
  private plan (events: readonly BusEnvelope[]): OutboxWrite {
    if (this.planner === null) return NOTHING
    const merged: OutboxWrite = { deliveries: [], cancelEscalationsOf: [], cancelEscalationsOfTurns: [] }
    for (const e of events) {
      const w = this.planner(e)
      merged.deliveries.push(...w.deliveries)
      merged.cancelEscalationsOf.push(...w.cancelEscalationsOf)
      merged.cancelEscalationsOfTurns.push(...w.cancelEscalationsOfTurns)
    }
    return merged
  }

  /**
   * Runs `save` alone when the events announce nothing (the usual case: one statement, no
   * transaction), else in one transaction with the outbox rows they announce.
   */
  private async saveAnnounced (save: pg.QueryConfig, events: readonly BusEnvelope[]): Promise<void> {
    const write = this.plan(events)
    if (isEmptyWrite(write)) {
      await this.pool.query(save)
      return
    }
    await inTransaction(this.pool, async (client) => {
      await client.query(save)
      await this.outbox.writeWith(client, write)
    })
  }

  /** Connects and creates the schema and tables if missing (serialised across instances). */
  static async open (options: PostgresStoreOptions): Promise<PostgresStore> {
    if (!SCHEMA_NAME.test(options.schema)) throw new Error(`invalid PostgreSQL schema name ${JSON.stringify(options.schema)}`)
    const pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.maxConnections,
      connectionTimeoutMillis: options.connectTimeoutMs,
      application_name: 'tollgate'
    })
    pool.on('error', options.onIdleError)
    const store = new PostgresStore(pool, options.schema, options)
    let queued: string[]
    try {
      await store.migrate(options.schema)
      queued = await store.queuedCompactions()
    } catch (err) {
      await pool.end()
      throw new Error(`cannot open the PostgreSQL store: ${(err as Error).message}`, { cause: err })
    }
    // Turns finished before a crash (or a stop that could not compact them) are compacted now, off the start.
    for (const turnId of queued) store.queueCompaction(turnId)
    return store
  }

  /** Checks the schema's version, then creates or upgrades the tables and stamps this build's version. */
  private async migrate (schema: string): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      // Two instances starting together would otherwise race on CREATE TABLE IF NOT EXISTS.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`tollgate:${schema}`])
      // Before the DDL: a schema a newer Tollgate wrote is left as it is.
      const version = await this.storedVersion(client)
      if (version > SCHEMA_VERSION) {
        throw new Error(`the schema "${schema}" was written by a newer Tollgate (schema version ${version}; this one knows versions up to ${SCHEMA_VERSION})`)
      }
      await client.query(ddl(this.s))
      await client.query(spendDdl(this.s))
      await client.query(scheduleDdl(this.s))
      await client.query(outboxDdl(this.s))
      await client.query(`INSERT INTO ${this.s}.tollgate_schema (version) VALUES ($1)
        ON CONFLICT (one) DO UPDATE SET version = excluded.version`, [SCHEMA_VERSION])
    })
  }

  /** The schema's version; 0 when it has none (new, or made before versions were kept). */
  private async storedVersion (client: pg.PoolClient): Promise<number> {
    const { rows: [table] } = await client.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [`${this.s}.tollgate_schema`])
    if (table?.present !== true) return 0
    const { rows: [row] } = await client.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${this.s}.tollgate_schema`)
    return row?.version ?? 0
  }

  private async queuedCompactions (): Promise<string[]> {
    const { rows } = await this.pool.query<{ turn_id: string }>(`SELECT turn_id FROM ${this.s}.tollgate_compactions`)
    return rows.map((r) => r.turn_id)
  }

  /** Runs `fn` after every earlier call sharing one of `keys` has settled. */
  private serial (keys: readonly string[], fn: () => Promise<void>): Promise<void> {
    const previous = keys.map((key) => this.chains.get(key)).filter((p) => p !== undefined)
    const next = (previous.length === 0 ? Promise.resolve() : Promise.all(previous)).then(fn)
    const tail = next.catch(() => {})
    for (const key of keys) {
      this.chains.set(key, tail)
      void tail.then(() => { if (this.chains.get(key) === tail) this.chains.delete(key) })
    }
    return next
  }

  async getSession (tenant: string, sessionId: string): Promise<SessionRecord | null> {
    const { rows } = await this.pool.query<{ doc: string }>(
      `SELECT doc FROM ${this.s}.tollgate_sessions WHERE tenant = $1 AND session_id = $2`, [tenant, sessionId])
    return rows[0] === undefined ? null : decodeSession(rows[0].doc)
  }

  async listSessions (owner: string, limit: number, before: PageKey = FIRST_PAGE): Promise<SessionRecord[]> {
    const { rows } = await this.pool.query<{ doc: string }>({ ...this.sql.listSessions, values: [owner, before.at, before.id, limit] })
    return rows.map((r) => decodeSession(r.doc))
  }

  async listTurns (owner: string, filter: TurnFilter, limit: number, before: PageKey = FIRST_PAGE): Promise<TurnRecord[]> {
    const values = [owner, filter.sessionId ?? null, filter.status ?? null, before.at, before.id, limit]
    const { rows } = await this.pool.query<{ doc: string }>({ ...this.sql.listTurns, values })
    return rows.map((r) => decodeTurn(r.doc))
  }

  async saveSession (session: SessionRecord): Promise<void> {
    const values = sessionColumns(session)
    await this.serial([sessionChain(session)], async () => {
      await this.pool.query({ ...this.sql.saveSession, values })
    })
  }

  async getTurn (turnId: string): Promise<TurnRecord | null> {
    const { rows } = await this.pool.query<{ doc: string }>(`SELECT doc FROM ${this.s}.tollgate_turns WHERE turn_id = $1`, [turnId])
    return rows[0] === undefined ? null : decodeTurn(rows[0].doc)
  }

  async saveTurn (turn: TurnRecord): Promise<void> {
    // Encoded now: the caller keeps mutating the live record while the save waits its turn.
    const values = this.turnRow(turn)
    await this.serial([`t:${turn.turn_id}`], async () => {
      await this.pool.query({ ...this.sql.saveTurn, values })
    })
  }

  /**
   * The pair save, with events appended in the same statement when there are any (encoded now);
   * `queue`: a final save that queues the turn for compaction.
   */
  private pairSave (
    turn: TurnRecord, session: SessionRecord, events: readonly BusEnvelope[], checkpoint: CheckpointRow | null = null, queue = false
  ): pg.QueryConfig {
    const values: unknown[] = [...this.turnRow(turn), ...sessionColumns(session)]
    const { sql } = this
    if (events.length === 0 && checkpoint === null) return { ...(queue ? sql.finishTurnAndSession : sql.saveTurnAndSession), values }
    values.push(...eventColumns(events))
    if (checkpoint === null) return { ...(queue ? sql.finishTurnSessionAndEvents : sql.saveTurnSessionAndEvents), values }
    values.push(...checkpointColumns([checkpoint]))
    return { ...this.sql.saveTurnSessionEventsAndCheckpoint, values }
  }

  /**
   * A finished turn worth compacting (`StreamedDeltas`) is queued for it by the statement of its
   * final save (`queueCompaction`): the save does not wait for the compaction.
   */
  async saveTurnAndSession (turn: TurnRecord, session: SessionRecord, events: readonly BusEnvelope[] = []): Promise<void> {
    this.streamed.count(events)
    const compactLater = TERMINAL_TURN_STATUSES.has(turn.status) && this.streamed.worthCompacting(turn.turn_id, turn.final_text)
    await this.savePair(turn, session, this.pairSave(turn, session, events, null, compactLater), events)
    if (compactLater) this.queueCompaction(turn.turn_id)
  }

  /**
   * Compaction happens off the finishing path: COMPACT_DELAY_MS after a turn finishes, one turn at
   * a time (a batch of streams that end together does not take the pool from the streams still
   * running), each in the turn's write order; close() waits for what is queued in memory. The
   * queue is durable (`tollgate_compactions`): a crash before the compaction leaves the turn's rows
   * as written, which read back the same, and the next start compacts them.
   */
  private queueCompaction (turnId: string): void {
    if (this.closed) return
    this.toCompact.add(turnId)
    this.compacting ??= this.compactQueued()
  }

  private async compactQueued (): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, COMPACT_DELAY_MS)
      if (this.compactedWaiters.length === 0) timer.unref()
      this.compactTimer = timer
      this.compactNow = () => { clearTimeout(timer); resolve() }
    })
    this.compactTimer = null
    this.compactNow = null
    for (const id of this.toCompact) {
      this.toCompact.delete(id)
      await this.serial([`t:${id}`], async () => { await this.compactTurn(id) })
    }
    this.compacting = null
    this.tellCompacted()
  }

  /**
   * The turn's delta rows, written a batch at a time, become one row per run, its text kept once,
   * in its record (delta-runs.ts): in one transaction the turn leaves the queue (unless another
   * instance took it: then nothing is done here), the rows read are deleted (by seq and last seq:
   * a row written since is left alone), the runs inserted and the terminal event's document
   * replaced. Run again on a compacted turn it changes nothing. When it fails the rows stay as
   * they were written, which read back as the same events, and the turn stays queued: it is
   * reported and tried again later (`CompactionRetries`).
   */
  private async compactTurn (turnId: string): Promise<void> {
    try {
      await inTransaction(this.pool, async (client) => {
        const claimed = await client.query({ ...this.sql.claimCompaction, values: [turnId] })
        if (claimed.rowCount !== 1) return
        const { rows } = await client.query<StoredRow>({ ...this.sql.compactable, values: [turnId] })
        const { rows: [record] } = await client.query<{ doc: string }>({ ...this.sql.turnDoc, values: [turnId] })
        const { remove, insert, rewrite } = compact(rows, record === undefined ? null : decodeTurn(record.doc).final_text ?? null)
        const removed = [turnId, remove.map((r) => r.seq), remove.map((r) => r.last_seq)]
        if (remove.length > 0) await client.query({ ...this.sql.removeRows, values: removed })
        if (insert.length > 0) await client.query({ ...this.sql.insertRows, values: rowColumns(insert) })
        for (const r of rewrite) await client.query({ ...this.sql.rewriteRow, values: [turnId, r.seq, r.doc] })
      })
      this.retries.succeeded(turnId)
    } catch (err) {
      this.onCompactionError(err)
      // A stop under way leaves the turn queued in the table, for the next start.
      if (!this.closed) this.retries.failed(turnId, this.compactedWaiters.length > 0)
    }
  }

  /** Resolves once no turn this store queued waits for its compaction or a retry of it (what a test waits on). */
  async compacted (): Promise<void> {
    if (this.compactionIdle()) return
    // Someone waits: the timers keep the process alive until then.
    this.compactTimer?.ref()
    this.retries.keepAlive()
    await new Promise<void>((resolve) => { this.compactedWaiters.push(resolve) })
  }

  private compactionIdle (): boolean {
    return this.compacting === null && !this.retries.pending
  }

  private tellCompacted (): void {
    if (!this.compactionIdle() || this.compactedWaiters.length === 0) return
    const waiters = this.compactedWaiters
    this.compactedWaiters = []
    for (const resolve of waiters) resolve()
  }

  /** The turn record's final_text, which a compacted turn's events refer to. */
  private async turnText (turnId: string): Promise<string | null> {
    return (await this.getTurn(turnId))?.final_text ?? null
  }

  /** Runs a pair save in the turn's and the session's write order. */
  private async savePair (turn: TurnRecord, session: SessionRecord, save: pg.QueryConfig, events: readonly BusEnvelope[]): Promise<void> {
    await this.serial([`t:${turn.turn_id}`, sessionChain(session)], async () => {
      await this.saveAnnounced(save, events)
    })
  }

  async createTurn (
    turn: TurnRecord, session: SessionRecord, claim: IdempotencyClaim | null, events: readonly BusEnvelope[] = [],
    checkpoint: CheckpointRow | null = null
  ): Promise<IdempotencyRecord | null> {
    this.streamed.count(events)
    const save = this.pairSave(turn, session, events, checkpoint)
    if (claim === null) {
      await this.savePair(turn, session, save, events)
      return null
    }
    let held: IdempotencyRecord | null = null
    await this.serial([`t:${turn.turn_id}`, sessionChain(session)], async () => {
      // The key's holder may expire between a lost claim and the read: then claim again.
      for (let attempt = 0; attempt < 3; attempt++) {
        if (await this.claimAndSave(save, turn.turn_id, claim, events)) return
        held = await this.getIdempotency(claim.owner, claim.key)
        if (held !== null) return
      }
      throw new Error('could not claim an idempotency key that keeps expiring')
    })
    return held
  }

  /** One transaction: the claim, then (only if it was won) the turn, its session and its events. */
  private async claimAndSave (
    save: pg.QueryConfig, turnId: string, claim: IdempotencyClaim, events: readonly BusEnvelope[]
  ): Promise<boolean> {
    return await inTransaction(this.pool, async (client) => {
      const claimValues = [claim.owner, claim.key, turnId, claim.fingerprint, claim.expiresMs, Date.now()]
      const won = await client.query({ ...this.sql.claim, values: claimValues })
      // A lost claim wrote nothing: the transaction commits empty.
      if (won.rowCount !== 1) return false
      await client.query(save)
      await this.outbox.writeWith(client, this.plan(events))
      return true
    })
  }

  async getIdempotency (owner: string, key: string): Promise<IdempotencyRecord | null> {
    const { rows } = await this.pool.query<{ turn_id: string, fingerprint: string }>({
      ...this.sql.getIdempotency, values: [owner, key, Date.now()]
    })
    return rows[0] === undefined ? null : { turnId: rows[0].turn_id, fingerprint: rows[0].fingerprint }
  }

  async pruneIdempotency (nowMs: number): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.s}.tollgate_idempotency WHERE expires_ms <= $1`, [nowMs])
  }

  private turnRow (turn: TurnRecord): unknown[] {
    return [turn.turn_id, turn.session_id, turn.owner, turn.status, this.instanceId, finishedMs(turn), encodeDoc(turn), turn.created_at]
  }

  async appendEvents (events: readonly BusEnvelope[], checkpoints: readonly CheckpointRow[] = []): Promise<void> {
    this.streamed.count(events)
    if (checkpoints.length > 0) {
      const values = [...eventColumns(events), ...checkpointColumns(checkpoints)]
      await this.saveAnnounced({ ...this.sql.appendEventsAndCheckpoints, values }, events)
      return
    }
    if (events.length === 0) return
    await this.saveAnnounced({ ...this.sql.appendEvents, values: eventColumns(events) }, events)
  }

  async readCheckpoint (turnId: string): Promise<CheckpointRow | null> {
    const { rows } = await this.pool.query<CheckpointRow>(`SELECT turn_id, seq, doc FROM ${this.s}.tollgate_checkpoints WHERE turn_id = $1`, [turnId])
    return rows[0] ?? null
  }

  async pruneCheckpoints (): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.s}.tollgate_checkpoints c WHERE NOT EXISTS
      (SELECT 1 FROM ${this.s}.tollgate_turns t WHERE t.turn_id = c.turn_id AND t.status = 'running')`)
  }

  async adoptTurn (turnId: string, instanceId: string | null): Promise<boolean> {
    const { rowCount } = await this.pool.query(`UPDATE ${this.s}.tollgate_turns SET instance_id = $1
      WHERE turn_id = $2 AND status = 'running' AND instance_id IS NOT DISTINCT FROM $3`, [this.instanceId, turnId, instanceId])
    // What it streamed before is not known here: its finish compacts it whatever it streams after.
    if (rowCount === 1) this.streamed.unknown(turnId)
    return rowCount === 1
  }

  async readEvents (turnId: string, afterSeq: number, limit: number): Promise<BusEnvelope[]> {
    return await readExpanded(async (after, n) => {
      const { rows } = await this.pool.query<StoredRow>({ ...this.sql.readEvents, values: [turnId, after, n] })
      return rows
    }, afterSeq, limit, async () => await this.turnText(turnId))
  }

  async lastEventSeq (turnId: string): Promise<number> {
    const { rows } = await this.pool.query<{ seq: number | null }>(`SELECT max(coalesce(last_seq, seq)) AS seq FROM ${this.s}.tollgate_events
      WHERE turn_id = $1 AND seq > (SELECT max(seq) FROM ${this.s}.tollgate_events WHERE turn_id = $1) - ${MAX_RUN}`, [turnId])
    return rows[0]?.seq ?? 0
  }

  async prune (finishedBeforeMs: number): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.s}.tollgate_events WHERE turn_id IN
      (SELECT turn_id FROM ${this.s}.tollgate_turns WHERE finished_ms IS NOT NULL AND finished_ms < $1)`, [finishedBeforeMs])
    await this.pool.query(`DELETE FROM ${this.s}.tollgate_instances WHERE expires_at < now() - $1::double precision * interval '1 millisecond'`, [LEASE_FORGET_MS])
  }

  async renewLease (ttlMs: number): Promise<void> {
    await this.pool.query(`INSERT INTO ${this.s}.tollgate_instances (instance_id, expires_at) VALUES ($1, now() + $2::double precision * interval '1 millisecond')
      ON CONFLICT (instance_id) DO UPDATE SET expires_at = excluded.expires_at`, [this.instanceId, ttlMs])
  }

  async releaseLease (): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.s}.tollgate_instances WHERE instance_id = $1`, [this.instanceId])
  }

  async liveInstances (): Promise<string[]> {
    const { rows } = await this.pool.query<{ instance_id: string }>(`SELECT instance_id FROM ${this.s}.tollgate_instances WHERE expires_at > now()`)
    return rows.map((r) => r.instance_id)
  }

  async runningTurns (): Promise<RunningTurn[]> {
    const { rows } = await this.pool.query<{ turn_id: string, instance_id: string | null }>(
      `SELECT turn_id, instance_id FROM ${this.s}.tollgate_turns WHERE status = 'running'`)
    return rows.map((r) => ({ turnId: r.turn_id, instanceId: r.instance_id }))
  }

  /** Finished for a dead instance (whatever it streamed, unknown here): queued for compaction by the same statement. */
  async interruptTurn (turn: TurnRecord, instanceId: string | null): Promise<boolean> {
    const { rows: [result] } = await this.pool.query<{ won: number }>({
      ...this.sql.interruptTurn, values: [turn.status, finishedMs(turn), encodeDoc(turn), turn.turn_id, instanceId]
    })
    const won = result?.won === 1
    if (won) this.queueCompaction(turn.turn_id)
    return won
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    // Retries not due yet are dropped: their turns stay queued in the table, for the next start.
    this.retries.stop()
    // Compactions queued before the stop are done now, not after their delay.
    this.compactNow?.()
    await this.compacting
    this.tellCompacted()
    await Promise.all(this.chains.values())
    await this.pool.end()
  }
}
