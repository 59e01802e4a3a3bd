/**
 * The scheduler of one instance: every `schedules.poll_ms` it reads the due schedules from the
 * store and claims each due tick with a conditional write, so that of all instances sharing the
 * store exactly one fires it. Ticks that passed while no gateway ran (found later than
 * `schedules.late_tolerance_ms`) are recorded as skipped, not fired in a burst; with `catch_up`
 * the latest of them fires once. Started with the gateway, stopped before its turns.
 */
import type { Logger } from 'pino'
import type { SchedulesConfig } from '../../schemas/config.js'
import type { TurnService } from '../service/turn-service.js'
import type { ScheduleRecord } from '../store/schedule-book.js'
import type { Store } from '../store/store.js'
import { cronClock, ticksUpTo } from './cron.js'
import { fireTick, NO_RUN_FAILED_SINK, type FireScope, type ScheduleRunFailedSink, type TickPlan } from './fire.js'

/** Due schedules read per poll; more wait for the next poll. */
const DUE_PER_POLL = 64

export interface SchedulerOptions {
  config: SchedulesConfig
  store: Store
  turns: TurnService
  log: Logger
  /** Told of runs that could not start or whose turn failed; none by default. */
  sink?: ScheduleRunFailedSink
}

/** What to do with a due tick found at `nowMs`, and the tick the schedule moves on to. */
export function planTick (s: ScheduleRecord, nowMs: number, lateToleranceMs: number): { plan: TickPlan, nextMs: number | null } {
  const dueMs = s.next_run_ms ?? nowMs
  const clock = cronClock(s.cron, s.timezone, dueMs - 1)
  const { count, latestMs } = ticksUpTo(clock, dueMs, nowMs)
  const nextMs = clock.after(Math.max(nowMs, latestMs))
  const onTime = nowMs - latestMs <= lateToleranceMs
  const fire = onTime || s.catch_up
  const missedCount = fire ? count - 1 : count
  return {
    plan: { fireMs: fire ? latestMs : null, missed: missedCount > 0 ? { fromMs: dueMs, count: missedCount } : null },
    nextMs
  }
}

export class Scheduler {
  private timer: NodeJS.Timeout | null = null
  private closed = false
  private readonly inflight = new Map<string, Set<Promise<void>>>()
  private readonly abort = new AbortController()
  private readonly scope: FireScope
  private polling: Promise<void> | null = null

  constructor (private readonly options: SchedulerOptions) {
    this.scope = {
      store: options.store,
      turns: options.turns,
      log: options.log,
      sink: options.sink ?? NO_RUN_FAILED_SINK,
      keepRuns: options.config.max_runs_kept,
      pollMs: options.config.poll_ms,
      signal: this.abort.signal,
      queued: new Set()
    }
  }

  /** Starts polling (unless `schedules.enabled` is false). */
  start (): void {
    if (!this.options.config.enabled || this.closed) return
    this.arm()
  }

  private arm (): void {
    if (this.closed) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.polling = this.poll().finally(() => {
        this.polling = null
        this.arm()
      })
    }, this.options.config.poll_ms)
    this.timer.unref()
  }

  private async poll (): Promise<void> {
    let due: ScheduleRecord[]
    try {
      due = await this.options.store.schedules.due(Date.now(), DUE_PER_POLL)
    } catch (err) {
      this.options.log.warn({ err }, 'could not read the due schedules; trying again at the next poll')
      return
    }
    for (const s of due) {
      if (this.closed || this.options.turns.closing) return
      this.track(s.schedule_id, this.claim(s))
    }
  }

  /** Claims the tick; the winner fires it (without holding up the poll: a queued run may wait long). */
  private async claim (s: ScheduleRecord): Promise<void> {
    const now = Date.now()
    try {
      const { plan, nextMs } = planTick(s, now, this.options.config.late_tolerance_ms)
      if (s.next_run_ms === null || !await this.options.store.schedules.claim(s.schedule_id, s.next_run_ms, nextMs)) return
      await fireTick(this.scope, s, plan)
    } catch (err) {
      this.options.log.error({ err, schedule_id: s.schedule_id }, 'a schedule tick failed')
    }
  }

  private track (scheduleId: string, work: Promise<void>): void {
    const set = this.inflight.get(scheduleId) ?? new Set()
    this.inflight.set(scheduleId, set)
    set.add(work)
    void work.finally(() => {
      set.delete(work)
      if (set.size === 0) this.inflight.delete(scheduleId)
    })
  }

  /**
   * Waits for the ticks of the schedule this instance is claiming or starting now. A run queued
   * behind the previous turn is not waited for: it looks the schedule up again before it starts.
   */
  async settled (scheduleId: string): Promise<void> {
    if (this.scope.queued.has(scheduleId)) return
    await Promise.all([...this.inflight.get(scheduleId) ?? []])
  }

  /** No tick fires after this; queued runs stop waiting; ticks being started finish starting. */
  async close (): Promise<void> {
    this.closed = true
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    this.abort.abort()
    await this.polling
    await Promise.all([...this.inflight.values()].flatMap((set) => [...set]))
  }
}
