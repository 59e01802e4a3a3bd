/**
 * Shared store on PostgreSQL (`pg`): many gateway instances use one database. Leases use the
 * database clock, so instances with skewed clocks still agree on who is alive. Saves of one
 * turn are chained so a pool running queries on several connections cannot reorder them.
 * The hot-path statements are named, so each pooled connection parses and plans them once; a
 * batch of events is one statement whatever its size (arrays unnested), and a turn+session
 * save pair is one statement too (two data-modifying CTE parts, atomic together).
 */
import pg from 'pg'
import type { BusEnvelope } from '../core/envelope.js'
import { decodeEnvelope, decodeSession, decodeTurn, encodeDoc, finishedMs, LEASE_FORGET_MS } from './codec.js'
import type { RunningTurn, SessionRecord, Store, TurnRecord } from './store.js'

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

export interface PostgresStoreOptions {
  connectionString: string
  schema: string
  instanceId: string
  maxConnections: number
  connectTimeoutMs: number
  /** Errors of idle pooled connections (the pool replaces them). */
  onIdleError: (err: Error) => void
}

function ddl (s: string): string {
  return `
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.tollgate_sessions (
  session_id text PRIMARY KEY,
  owner text NOT NULL,
  doc text NOT NULL
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
CREATE TABLE IF NOT EXISTS ${s}.tollgate_instances (
  instance_id text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);`
}

function statements (s: string) {
  const upsertTurn = `INSERT INTO ${s}.tollgate_turns (turn_id, session_id, owner, status, instance_id, finished_ms, doc)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (turn_id) DO UPDATE SET status = excluded.status, finished_ms = excluded.finished_ms, doc = excluded.doc
    WHERE ${s}.tollgate_turns.status = 'running'`
  const upsertSession = (a: number, b: number, c: number): string => `INSERT INTO ${s}.tollgate_sessions (session_id, owner, doc)
    VALUES ($${a}, $${b}, $${c}) ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, doc = excluded.doc`
  return {
    saveTurn: { name: 'tollgate_save_turn', text: upsertTurn },
    saveSession: { name: 'tollgate_save_session', text: upsertSession(1, 2, 3) },
    saveTurnAndSession: { name: 'tollgate_save_turn_and_session', text: `WITH saved_turn AS (${upsertTurn}) ${upsertSession(8, 9, 10)}` },
    appendEvents: {
      name: 'tollgate_append_events',
      text: `INSERT INTO ${s}.tollgate_events (turn_id, seq, doc)
        SELECT * FROM unnest($1::text[], $2::integer[], $3::text[]) ON CONFLICT DO NOTHING`
    }
  }
}

export class PostgresStore implements Store {
  readonly instanceId: string
  readonly exclusive = false
  private readonly pool: pg.Pool
  /** Quoted schema name, validated: safe to splice into SQL. */
  private readonly s: string
  private readonly chains = new Map<string, Promise<void>>()
  private readonly sql: ReturnType<typeof statements>
  private closed = false

  private constructor (pool: pg.Pool, schema: string, instanceId: string) {
    this.pool = pool
    this.s = `"${schema}"`
    this.instanceId = instanceId
    this.sql = statements(this.s)
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
    const store = new PostgresStore(pool, options.schema, options.instanceId)
    try {
      await store.migrate(options.schema)
    } catch (err) {
      await pool.end()
      throw new Error(`cannot open the PostgreSQL store: ${(err as Error).message}`, { cause: err })
    }
    return store
  }

  private async migrate (schema: string): Promise<void> {
    const client = await this.pool.connect()
    try {
      await client.query('BEGIN')
      // Two instances starting together would otherwise race on CREATE TABLE IF NOT EXISTS.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`tollgate:${schema}`])
      await client.query(ddl(this.s))
      await client.query('COMMIT')
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      client.release()
    }
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

  async getSession (sessionId: string): Promise<SessionRecord | null> {
    const { rows } = await this.pool.query<{ doc: string }>(`SELECT doc FROM ${this.s}.tollgate_sessions WHERE session_id = $1`, [sessionId])
    return rows[0] === undefined ? null : decodeSession(rows[0].doc)
  }

  async saveSession (session: SessionRecord): Promise<void> {
    const values = [session.session_id, session.owner, encodeDoc(session)]
    await this.serial([`s:${session.session_id}`], async () => {
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

  async saveTurnAndSession (turn: TurnRecord, session: SessionRecord): Promise<void> {
    const values = [...this.turnRow(turn), session.session_id, session.owner, encodeDoc(session)]
    await this.serial([`t:${turn.turn_id}`, `s:${session.session_id}`], async () => {
      await this.pool.query({ ...this.sql.saveTurnAndSession, values })
    })
  }

  private turnRow (turn: TurnRecord): unknown[] {
    return [turn.turn_id, turn.session_id, turn.owner, turn.status, this.instanceId, finishedMs(turn), encodeDoc(turn)]
  }

  async appendEvents (events: readonly BusEnvelope[]): Promise<void> {
    if (events.length === 0) return
    const values = [events.map((e) => e.turn_id), events.map((e) => e.seq), events.map((e) => encodeDoc(e))]
    await this.pool.query({ ...this.sql.appendEvents, values })
  }

  async readEvents (turnId: string, afterSeq: number, limit: number): Promise<BusEnvelope[]> {
    const { rows } = await this.pool.query<{ doc: string }>(
      `SELECT doc FROM ${this.s}.tollgate_events WHERE turn_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [turnId, afterSeq, limit])
    return rows.map((r) => decodeEnvelope(r.doc))
  }

  async lastEventSeq (turnId: string): Promise<number> {
    const { rows } = await this.pool.query<{ seq: number | null }>(`SELECT max(seq) AS seq FROM ${this.s}.tollgate_events WHERE turn_id = $1`, [turnId])
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

  async interruptTurn (turn: TurnRecord, instanceId: string | null): Promise<boolean> {
    const { rowCount } = await this.pool.query(`UPDATE ${this.s}.tollgate_turns SET status = $1, finished_ms = $2, doc = $3
      WHERE turn_id = $4 AND status = 'running' AND instance_id IS NOT DISTINCT FROM $5`,
    [turn.status, finishedMs(turn), encodeDoc(turn), turn.turn_id, instanceId])
    return rowCount === 1
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all(this.chains.values())
    await this.pool.end()
  }
}
