/**
 * The schedule book: schedules and their runs, kept in the store so every instance sees them.
 * A tick is claimed with a conditional write (the schedule's next tick moves on only if it is
 * still the one the claimer read), so exactly one instance fires it. The in-process book of the
 * memory store is here; SQLite and PostgreSQL keep theirs in schedule-sqlite.ts and
 * schedule-postgres.ts.
 */
import type { ScheduleOnApproval, ScheduleOverlap, ScheduleRun } from '../../schemas/schedule.js'

/** A schedule as stored: its owner's identity (a tick starts a turn as that principal) and its spec. */
export interface ScheduleRecord {
  schedule_id: string
  /** principalKey of the owner: the only thing ownership checks compare. */
  owner: string
  tenant: string
  sub: string
  /** The owner's scopes when it created the schedule: agent access is checked against them at each tick. */
  scopes: string[]
  cron: string
  timezone: string
  agent?: string
  message: string
  session_id?: string
  overlap: ScheduleOverlap
  on_approval: ScheduleOnApproval
  budget_usd?: number
  enabled: boolean
  catch_up: boolean
  /** Epoch ms of the next tick; null when the expression has no more. Ticks fire only while enabled. */
  next_run_ms: number | null
  /** The turn the latest run started (overlap looks at it). */
  last_turn_id?: string
  created_at: string
  updated_at: string
}

/** A run as stored: `running` stays until a reader resolves it from its turn's record. */
export interface ScheduleRunRecord extends ScheduleRun {
  fired_ms: number
}

export interface ScheduleBook {
  /** Inserts `schedule` unless its owner has `maxPerOwner` already (checked and inserted atomically); answers whether it did. */
  create (schedule: ScheduleRecord, maxPerOwner: number): Promise<boolean>
  get (scheduleId: string): Promise<ScheduleRecord | null>
  /** The owner's schedules, newest first. */
  list (owner: string): Promise<ScheduleRecord[]>
  /** Rewrites a schedule's spec and next tick (not its last turn); false when it is gone. */
  update (schedule: ScheduleRecord): Promise<boolean>
  /** Deletes a schedule and its runs; false when it was not there. */
  delete (scheduleId: string): Promise<boolean>
  /** Enabled schedules whose next tick is at or before `nowMs`, earliest first, at most `limit`. */
  due (nowMs: number, limit: number): Promise<ScheduleRecord[]>
  /**
   * Moves the schedule's next tick from `dueMs` to `nextMs` only if it is still enabled and still
   * at `dueMs`: of two instances claiming one tick, exactly one gets true.
   */
  claim (scheduleId: string, dueMs: number, nextMs: number | null): Promise<boolean>
  setLastTurn (scheduleId: string, turnId: string): Promise<void>
  /** Records a run, keeping only the schedule's `keep` newest. */
  addRun (run: ScheduleRunRecord, keep: number): Promise<void>
  /** The schedule's runs, newest tick first. */
  runs (scheduleId: string, limit: number): Promise<ScheduleRunRecord[]>
}

/** Newest first: by `at`, then by id, both descending. */
function newer (a: { at: number | string, id: string }, b: { at: number | string, id: string }): number {
  if (a.at !== b.at) return a.at < b.at ? 1 : -1
  return a.id === b.id ? 0 : a.id < b.id ? 1 : -1
}

export function newestRunsFirst (a: ScheduleRunRecord, b: ScheduleRunRecord): number {
  return newer({ at: a.fired_ms, id: a.run_id }, { at: b.fired_ms, id: b.run_id })
}

export function newestSchedulesFirst (a: ScheduleRecord, b: ScheduleRecord): number {
  return newer({ at: a.created_at, id: a.schedule_id }, { at: b.created_at, id: b.schedule_id })
}

/** The in-process book of the memory store: single-threaded, so each check-then-write is atomic. */
export class MemoryScheduleBook implements ScheduleBook {
  private readonly schedules = new Map<string, ScheduleRecord>()
  private readonly runsOf = new Map<string, ScheduleRunRecord[]>()

  async create (schedule: ScheduleRecord, maxPerOwner: number): Promise<boolean> {
    if ([...this.schedules.values()].filter((s) => s.owner === schedule.owner).length >= maxPerOwner) return false
    this.schedules.set(schedule.schedule_id, structuredClone(schedule))
    return true
  }

  async get (scheduleId: string): Promise<ScheduleRecord | null> {
    const s = this.schedules.get(scheduleId)
    return s === undefined ? null : structuredClone(s)
  }

  async list (owner: string): Promise<ScheduleRecord[]> {
    return [...this.schedules.values()].filter((s) => s.owner === owner).sort(newestSchedulesFirst).map((s) => structuredClone(s))
  }

  async update (schedule: ScheduleRecord): Promise<boolean> {
    const stored = this.schedules.get(schedule.schedule_id)
    if (stored === undefined) return false
    const { last_turn_id: lastTurn } = stored
    const next = structuredClone(schedule)
    delete next.last_turn_id
    this.schedules.set(schedule.schedule_id, lastTurn === undefined ? next : { ...next, last_turn_id: lastTurn })
    return true
  }

  async delete (scheduleId: string): Promise<boolean> {
    this.runsOf.delete(scheduleId)
    return this.schedules.delete(scheduleId)
  }

  async due (nowMs: number, limit: number): Promise<ScheduleRecord[]> {
    return [...this.schedules.values()]
      .filter((s) => s.enabled && s.next_run_ms !== null && s.next_run_ms <= nowMs)
      .sort((a, b) => (a.next_run_ms ?? 0) - (b.next_run_ms ?? 0))
      .slice(0, limit)
      .map((s) => structuredClone(s))
  }

  async claim (scheduleId: string, dueMs: number, nextMs: number | null): Promise<boolean> {
    const s = this.schedules.get(scheduleId)
    if (s === undefined || !s.enabled || s.next_run_ms !== dueMs) return false
    s.next_run_ms = nextMs
    return true
  }

  async setLastTurn (scheduleId: string, turnId: string): Promise<void> {
    const s = this.schedules.get(scheduleId)
    if (s !== undefined) s.last_turn_id = turnId
  }

  async addRun (run: ScheduleRunRecord, keep: number): Promise<void> {
    if (!this.schedules.has(run.schedule_id)) return
    const runs = this.runsOf.get(run.schedule_id) ?? []
    runs.push(structuredClone(run))
    runs.sort(newestRunsFirst)
    this.runsOf.set(run.schedule_id, runs.slice(0, keep))
  }

  async runs (scheduleId: string, limit: number): Promise<ScheduleRunRecord[]> {
    return (this.runsOf.get(scheduleId) ?? []).slice(0, limit).map((r) => structuredClone(r))
  }
}
