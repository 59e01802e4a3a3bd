/**
 * The schedule book in the SQLite database. The next tick, enabled flag and last turn are columns
 * (the claim and the due query read them); the rest of a schedule is one JSON document.
 */
import type Database from 'better-sqlite3'
import type { ScheduleBook, ScheduleRecord, ScheduleRunRecord } from './schedule-book.js'

const TABLES = `CREATE TABLE IF NOT EXISTS tollgate_schedules (
  schedule_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  next_run_ms INTEGER,
  last_turn_id TEXT,
  created_at TEXT NOT NULL,
  doc TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tollgate_schedules_owner ON tollgate_schedules (owner, created_at);
CREATE INDEX IF NOT EXISTS tollgate_schedules_due ON tollgate_schedules (next_run_ms) WHERE enabled = 1;
CREATE TABLE IF NOT EXISTS tollgate_schedule_runs (
  run_id TEXT PRIMARY KEY,
  schedule_id TEXT NOT NULL,
  fired_ms INTEGER NOT NULL,
  doc TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tollgate_schedule_runs_by_schedule ON tollgate_schedule_runs (schedule_id, fired_ms);`

interface ScheduleRow {
  next_run_ms: number | null
  last_turn_id: string | null
  doc: string
}

/** The spec part of a record: what the doc column holds. */
export function scheduleDoc (s: ScheduleRecord): string {
  const { next_run_ms: _n, last_turn_id: _l, ...spec } = s
  return JSON.stringify(spec)
}

export function scheduleOfRow (row: { next_run_ms: number | string | null, last_turn_id: string | null, doc: string }): ScheduleRecord {
  const spec = JSON.parse(row.doc) as Omit<ScheduleRecord, 'next_run_ms' | 'last_turn_id'>
  return {
    ...spec,
    next_run_ms: row.next_run_ms === null ? null : Number(row.next_run_ms),
    ...(row.last_turn_id === null ? {} : { last_turn_id: row.last_turn_id })
  }
}

export function runDoc (run: ScheduleRunRecord): string {
  return JSON.stringify(run)
}

export class SqliteScheduleBook implements ScheduleBook {
  private readonly stmt
  private readonly createTx: (s: ScheduleRecord, max: number) => boolean
  private readonly addRunTx: (run: ScheduleRunRecord, keep: number) => void
  private readonly deleteTx: (id: string) => boolean

  constructor (db: Database.Database) {
    db.exec(TABLES)
    const cols = 'next_run_ms, last_turn_id, doc'
    this.stmt = {
      count: db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM tollgate_schedules WHERE owner = ?'),
      insert: db.prepare('INSERT INTO tollgate_schedules (schedule_id, owner, enabled, next_run_ms, last_turn_id, created_at, doc) VALUES (?, ?, ?, ?, NULL, ?, ?)'),
      get: db.prepare<[string], ScheduleRow>(`SELECT ${cols} FROM tollgate_schedules WHERE schedule_id = ?`),
      list: db.prepare<[string], ScheduleRow>(`SELECT ${cols} FROM tollgate_schedules WHERE owner = ? ORDER BY created_at DESC, schedule_id DESC`),
      update: db.prepare('UPDATE tollgate_schedules SET enabled = ?, next_run_ms = ?, doc = ? WHERE schedule_id = ?'),
      delete: db.prepare('DELETE FROM tollgate_schedules WHERE schedule_id = ?'),
      deleteRuns: db.prepare('DELETE FROM tollgate_schedule_runs WHERE schedule_id = ?'),
      due: db.prepare<[number, number], ScheduleRow>(
        `SELECT ${cols} FROM tollgate_schedules WHERE enabled = 1 AND next_run_ms IS NOT NULL AND next_run_ms <= ? ORDER BY next_run_ms LIMIT ?`
      ),
      claim: db.prepare('UPDATE tollgate_schedules SET next_run_ms = ? WHERE schedule_id = ? AND enabled = 1 AND next_run_ms = ?'),
      setLastTurn: db.prepare('UPDATE tollgate_schedules SET last_turn_id = ? WHERE schedule_id = ?'),
      exists: db.prepare<[string], { one: number }>('SELECT 1 AS one FROM tollgate_schedules WHERE schedule_id = ?'),
      insertRun: db.prepare('INSERT INTO tollgate_schedule_runs (run_id, schedule_id, fired_ms, doc) VALUES (?, ?, ?, ?)'),
      pruneRuns: db.prepare(`DELETE FROM tollgate_schedule_runs WHERE schedule_id = ? AND run_id NOT IN (
        SELECT run_id FROM tollgate_schedule_runs WHERE schedule_id = ? ORDER BY fired_ms DESC, run_id DESC LIMIT ?)`),
      runs: db.prepare<[string, number], { doc: string }>(
        'SELECT doc FROM tollgate_schedule_runs WHERE schedule_id = ? ORDER BY fired_ms DESC, run_id DESC LIMIT ?'
      )
    }
    const { stmt } = this
    const create = db.transaction((s: ScheduleRecord, max: number): boolean => {
      if ((stmt.count.get(s.owner)?.n ?? 0) >= max) return false
      stmt.insert.run(s.schedule_id, s.owner, s.enabled ? 1 : 0, s.next_run_ms, s.created_at, scheduleDoc(s))
      return true
    })
    this.createTx = (s, max) => create.immediate(s, max)
    const addRun = db.transaction((run: ScheduleRunRecord, keep: number) => {
      // A schedule deleted meanwhile keeps no runs.
      if (stmt.exists.get(run.schedule_id) === undefined) return
      stmt.insertRun.run(run.run_id, run.schedule_id, run.fired_ms, runDoc(run))
      stmt.pruneRuns.run(run.schedule_id, run.schedule_id, keep)
    })
    this.addRunTx = (run, keep) => { addRun.immediate(run, keep) }
    const remove = db.transaction((id: string): boolean => {
      stmt.deleteRuns.run(id)
      return stmt.delete.run(id).changes > 0
    })
    this.deleteTx = (id) => remove.immediate(id)
  }

  async create (schedule: ScheduleRecord, maxPerOwner: number): Promise<boolean> {
    return this.createTx(schedule, maxPerOwner)
  }

  async get (scheduleId: string): Promise<ScheduleRecord | null> {
    const row = this.stmt.get.get(scheduleId)
    return row === undefined ? null : scheduleOfRow(row)
  }

  async list (owner: string): Promise<ScheduleRecord[]> {
    return this.stmt.list.all(owner).map(scheduleOfRow)
  }

  async update (s: ScheduleRecord): Promise<boolean> {
    return this.stmt.update.run(s.enabled ? 1 : 0, s.next_run_ms, scheduleDoc(s), s.schedule_id).changes > 0
  }

  async delete (scheduleId: string): Promise<boolean> {
    return this.deleteTx(scheduleId)
  }

  async due (nowMs: number, limit: number): Promise<ScheduleRecord[]> {
    return this.stmt.due.all(nowMs, limit).map(scheduleOfRow)
  }

  async claim (scheduleId: string, dueMs: number, nextMs: number | null): Promise<boolean> {
    return this.stmt.claim.run(nextMs, scheduleId, dueMs).changes === 1
  }

  async setLastTurn (scheduleId: string, turnId: string): Promise<void> {
    this.stmt.setLastTurn.run(turnId, scheduleId)
  }

  async addRun (run: ScheduleRunRecord, keep: number): Promise<void> {
    this.addRunTx(run, keep)
  }

  async runs (scheduleId: string, limit: number): Promise<ScheduleRunRecord[]> {
    return this.stmt.runs.all(scheduleId, limit).map((r) => JSON.parse(r.doc) as ScheduleRunRecord)
  }
}
