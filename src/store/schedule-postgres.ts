/**
 * The schedule book in PostgreSQL, shared by every instance. A tick's claim is one conditional
 * UPDATE (row-locked by PostgreSQL: of two instances, the second sees the moved tick and changes
 * nothing); a create counts the owner's schedules under a transaction-scoped advisory lock of
 * that owner, so two creates cannot both pass the limit.
 */
import type pg from 'pg'
import { inTransaction } from './pg-transaction.js'
import type { ScheduleBook, ScheduleRecord, ScheduleRunRecord } from './schedule-book.js'
import { runDoc, scheduleDoc, scheduleOfRow } from './schedule-sqlite.js'

/** The book's tables; `s` is the quoted schema name. */
export function scheduleDdl (s: string): string {
  return `CREATE TABLE IF NOT EXISTS ${s}.tollgate_schedules (
  schedule_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  enabled BOOLEAN NOT NULL,
  next_run_ms BIGINT,
  last_turn_id TEXT,
  created_at TEXT NOT NULL,
  doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tollgate_schedules_owner ON ${s}.tollgate_schedules (owner, created_at);
CREATE INDEX IF NOT EXISTS tollgate_schedules_due ON ${s}.tollgate_schedules (next_run_ms) WHERE enabled;
CREATE TABLE IF NOT EXISTS ${s}.tollgate_schedule_runs (
  run_id TEXT PRIMARY KEY,
  schedule_id TEXT NOT NULL,
  fired_ms BIGINT NOT NULL,
  doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tollgate_schedule_runs_by_schedule ON ${s}.tollgate_schedule_runs (schedule_id, fired_ms);`
}

type Row = { next_run_ms: string | null, last_turn_id: string | null, doc: string }
const COLS = 'next_run_ms, last_turn_id, doc'

export class PostgresScheduleBook implements ScheduleBook {
  constructor (private readonly pool: pg.Pool, private readonly s: string) {}

  async create (sc: ScheduleRecord, maxPerOwner: number): Promise<boolean> {
    return await inTransaction(this.pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`tollgate:schedules:${sc.owner}`])
      const { rows } = await client.query<{ n: string }>(`SELECT COUNT(*) AS n FROM ${this.s}.tollgate_schedules WHERE owner = $1`, [sc.owner])
      if (Number(rows[0]?.n ?? 0) >= maxPerOwner) return false
      await client.query(
        `INSERT INTO ${this.s}.tollgate_schedules (schedule_id, owner, enabled, next_run_ms, last_turn_id, created_at, doc)
          VALUES ($1, $2, $3, $4, NULL, $5, $6)`,
        [sc.schedule_id, sc.owner, sc.enabled, sc.next_run_ms, sc.created_at, scheduleDoc(sc)]
      )
      return true
    })
  }

  async get (scheduleId: string): Promise<ScheduleRecord | null> {
    const { rows } = await this.pool.query<Row>(`SELECT ${COLS} FROM ${this.s}.tollgate_schedules WHERE schedule_id = $1`, [scheduleId])
    return rows[0] === undefined ? null : scheduleOfRow(rows[0])
  }

  async list (owner: string): Promise<ScheduleRecord[]> {
    const { rows } = await this.pool.query<Row>(
      `SELECT ${COLS} FROM ${this.s}.tollgate_schedules WHERE owner = $1 ORDER BY created_at DESC, schedule_id DESC`, [owner]
    )
    return rows.map(scheduleOfRow)
  }

  async update (sc: ScheduleRecord): Promise<boolean> {
    const res = await this.pool.query(
      `UPDATE ${this.s}.tollgate_schedules SET enabled = $1, next_run_ms = $2, doc = $3 WHERE schedule_id = $4`,
      [sc.enabled, sc.next_run_ms, scheduleDoc(sc), sc.schedule_id]
    )
    return (res.rowCount ?? 0) > 0
  }

  async delete (scheduleId: string): Promise<boolean> {
    return await inTransaction(this.pool, async (client) => {
      await client.query(`DELETE FROM ${this.s}.tollgate_schedule_runs WHERE schedule_id = $1`, [scheduleId])
      const res = await client.query(`DELETE FROM ${this.s}.tollgate_schedules WHERE schedule_id = $1`, [scheduleId])
      return (res.rowCount ?? 0) > 0
    })
  }

  async due (nowMs: number, limit: number): Promise<ScheduleRecord[]> {
    const { rows } = await this.pool.query<Row>(
      `SELECT ${COLS} FROM ${this.s}.tollgate_schedules WHERE enabled AND next_run_ms IS NOT NULL AND next_run_ms <= $1
        ORDER BY next_run_ms LIMIT $2`,
      [nowMs, limit]
    )
    return rows.map(scheduleOfRow)
  }

  async claim (scheduleId: string, dueMs: number, nextMs: number | null): Promise<boolean> {
    const res = await this.pool.query(
      `UPDATE ${this.s}.tollgate_schedules SET next_run_ms = $1 WHERE schedule_id = $2 AND enabled AND next_run_ms = $3`,
      [nextMs, scheduleId, dueMs]
    )
    return res.rowCount === 1
  }

  async setLastTurn (scheduleId: string, turnId: string): Promise<void> {
    await this.pool.query(`UPDATE ${this.s}.tollgate_schedules SET last_turn_id = $1 WHERE schedule_id = $2`, [turnId, scheduleId])
  }

  async addRun (run: ScheduleRunRecord, keep: number): Promise<void> {
    // One statement: a schedule deleted meanwhile keeps no runs.
    await this.pool.query(
      `INSERT INTO ${this.s}.tollgate_schedule_runs (run_id, schedule_id, fired_ms, doc)
        SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM ${this.s}.tollgate_schedules WHERE schedule_id = $2)`,
      [run.run_id, run.schedule_id, run.fired_ms, runDoc(run)]
    )
    await this.pool.query(
      `DELETE FROM ${this.s}.tollgate_schedule_runs WHERE schedule_id = $1 AND run_id NOT IN (
        SELECT run_id FROM ${this.s}.tollgate_schedule_runs WHERE schedule_id = $1 ORDER BY fired_ms DESC, run_id DESC LIMIT $2)`,
      [run.schedule_id, keep]
    )
  }

  async runs (scheduleId: string, limit: number): Promise<ScheduleRunRecord[]> {
    const { rows } = await this.pool.query<{ doc: string }>(
      `SELECT doc FROM ${this.s}.tollgate_schedule_runs WHERE schedule_id = $1 ORDER BY fired_ms DESC, run_id DESC LIMIT $2`,
      [scheduleId, limit]
    )
    return rows.map((r) => JSON.parse(r.doc) as ScheduleRunRecord)
  }
}
