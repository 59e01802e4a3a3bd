/**
 * The principal's schedules: create (checked against the per-principal limit in the store), read,
 * change, delete, and the runs of one. Owner-scoped like turns: another principal's schedule
 * answers exactly like a missing one (SCHEDULE_NOT_FOUND).
 */
import type { Logger } from 'pino'
import type { Schedule, SchedulePatch, ScheduleRequest, ScheduleRun } from '../../schemas/schedule.js'
import { principalKey, type Principal } from '../auth/principal.js'
import type { Config } from '../core/config.js'
import { TollgateError } from '../core/errors.js'
import { timeOrderedUuid } from '../core/ids.js'
import { requireAgentAccess } from '../service/agent-access.js'
import { checkRequestedBudget } from '../service/budgets.js'
import type { ScheduleBook, ScheduleRecord } from '../store/schedule-book.js'
import type { Store } from '../store/store.js'
import { canonicalTimeZone, cronClock } from './cron.js'

export interface SchedulesDeps {
  config: Config
  store: Store
  log: Logger
  /** Waits for a tick of the schedule that this instance is firing right now (DELETE answers after it). */
  settled: (scheduleId: string) => Promise<void>
}

export function publicSchedule (s: ScheduleRecord): Schedule {
  return {
    schedule_id: s.schedule_id,
    cron: s.cron,
    timezone: s.timezone,
    ...(s.agent === undefined ? {} : { agent: s.agent }),
    message: s.message,
    ...(s.session_id === undefined ? {} : { session_id: s.session_id }),
    overlap: s.overlap,
    on_approval: s.on_approval,
    ...(s.budget_usd === undefined ? {} : { budget_usd: s.budget_usd }),
    enabled: s.enabled,
    catch_up: s.catch_up,
    next_run_at: s.enabled && s.next_run_ms !== null ? new Date(s.next_run_ms).toISOString() : null,
    ...(s.last_turn_id === undefined ? {} : { last_turn_id: s.last_turn_id }),
    created_at: s.created_at,
    updated_at: s.updated_at
  }
}

export class Schedules {
  private readonly book: ScheduleBook

  constructor (private readonly deps: SchedulesDeps) {
    this.book = deps.store.schedules
  }

  /** Checks what a tick would be refused for anyway (agent, access, budget), so a bad schedule is a 4xx now, not a failed run later. */
  private check (principal: Principal, spec: ScheduleRecord): void {
    requireAgentAccess(this.deps.config, principal, spec.agent ?? this.deps.config.default_agent)
    checkRequestedBudget(this.deps.config.budgets, spec.budget_usd)
  }

  /** The next tick after now of `spec`'s expression (INVALID_CRON / INVALID_TIME_ZONE when unreadable). */
  private nextTick (spec: Pick<ScheduleRecord, 'cron' | 'timezone'>, nowMs: number): number | null {
    return cronClock(spec.cron, spec.timezone, nowMs).after(nowMs)
  }

  async create (principal: Principal, request: ScheduleRequest): Promise<ScheduleRecord> {
    const now = Date.now()
    const at = new Date(now).toISOString()
    const timezone = canonicalTimeZone(request.timezone ?? 'UTC')
    const record: ScheduleRecord = {
      schedule_id: `sch_${timeOrderedUuid(now)}`,
      owner: principalKey(principal),
      tenant: principal.tenant,
      sub: principal.sub,
      scopes: [...principal.scopes],
      cron: request.cron,
      timezone,
      ...(request.agent === undefined ? {} : { agent: request.agent }),
      message: request.message,
      ...(request.session_id === undefined ? {} : { session_id: request.session_id }),
      overlap: request.overlap ?? 'skip',
      on_approval: request.on_approval ?? 'wait',
      ...(request.budget_usd === undefined ? {} : { budget_usd: request.budget_usd }),
      enabled: request.enabled ?? true,
      catch_up: request.catch_up ?? false,
      next_run_ms: null,
      created_at: at,
      updated_at: at
    }
    record.next_run_ms = this.nextTick(record, now)
    this.check(principal, record)
    const max = this.deps.config.schedules.max_per_principal
    if (!await this.book.create(record, max)) {
      throw new TollgateError('TOO_MANY_SCHEDULES', `this principal has ${max} schedules (schedules.max_per_principal); delete one first`)
    }
    return record
  }

  async list (principal: Principal): Promise<ScheduleRecord[]> {
    return await this.book.list(principalKey(principal))
  }

  async get (principal: Principal, scheduleId: string): Promise<ScheduleRecord> {
    const s = await this.book.get(scheduleId)
    if (s === null || s.owner !== principalKey(principal)) {
      if (s !== null) this.deps.log.warn({ audit: 'cross_principal_schedule', principal: principalKey(principal), schedule_id: scheduleId }, 'refused access to a schedule of another principal')
      throw new TollgateError('SCHEDULE_NOT_FOUND')
    }
    return s
  }

  /** Any field may change; the next tick is computed again from now (ticks missed while disabled are not made up). */
  async update (principal: Principal, scheduleId: string, patch: SchedulePatch): Promise<ScheduleRecord> {
    const stored = await this.get(principal, scheduleId)
    const now = Date.now()
    const next: ScheduleRecord = { ...stored, ...patch, updated_at: new Date(now).toISOString() }
    next.timezone = canonicalTimeZone(next.timezone)
    next.next_run_ms = this.nextTick(next, now)
    this.check(principal, next)
    if (!await this.book.update(next)) throw new TollgateError('SCHEDULE_NOT_FOUND')
    return next
  }

  /** Deleted: no tick fires after this answers (a tick this instance was firing has finished starting). */
  async delete (principal: Principal, scheduleId: string): Promise<void> {
    await this.get(principal, scheduleId)
    if (!await this.book.delete(scheduleId)) throw new TollgateError('SCHEDULE_NOT_FOUND')
    await this.deps.settled(scheduleId)
  }

  /** The schedule's runs, newest first; a run whose turn was started shows the turn's status now. */
  async runs (principal: Principal, scheduleId: string, limit: number): Promise<ScheduleRun[]> {
    await this.get(principal, scheduleId)
    const runs = await this.book.runs(scheduleId, limit)
    return await Promise.all(runs.map(async ({ fired_ms: _f, ...run }) => {
      if (run.outcome !== 'running' || run.turn_id === undefined) return run
      const turn = await this.deps.store.getTurn(run.turn_id)
      return turn === null ? run : { ...run, outcome: turn.status }
    }))
  }
}
