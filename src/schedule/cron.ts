/**
 * Reading a schedule's cron expression in its time zone (croner: 5 fields, 6 with seconds first,
 * 7 with a year last, or a nickname such as @daily; DST gaps and repeats handled by croner). An
 * expression or zone that cannot be read is refused with a stable code before anything is stored.
 */
import { Cron } from 'croner'
import { TollgateError } from '../core/errors.js'

/** Ticks walked at most when counting missed ones (a per-second schedule after a long stop). */
export const MAX_TICK_WALK = 10_000

export interface CronClock {
  /** The first tick strictly after `ms`, or null when the expression has no more. */
  after (ms: number): number | null
  /** The last tick at or before `ms`, or null when there is none. */
  atOrBefore (ms: number): number | null
}

/** The IANA name of `zone` as the runtime spells it (`europe/berlin` → `Europe/Berlin`); INVALID_TIME_ZONE if unknown. */
export function canonicalTimeZone (zone: string): string {
  try {
    return Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone
  } catch {
    throw new TollgateError('INVALID_TIME_ZONE', `unknown time zone ${JSON.stringify(zone)}`)
  }
}

/** The expression's clock; INVALID_CRON when croner cannot read it or it never fires after `nowMs`. */
export function cronClock (expression: string, timezone: string, nowMs: number = Date.now()): CronClock {
  let cron: Cron
  try {
    cron = new Cron(expression, { paused: true, timezone })
  } catch (err) {
    throw new TollgateError('INVALID_CRON', `cron ${JSON.stringify(expression)}: ${(err as Error).message}`)
  }
  const clock: CronClock = {
    after: (ms) => cron.nextRun(new Date(ms))?.getTime() ?? null,
    // croner counts a run earlier in the reference's second as before it: a millisecond later includes `ms` itself.
    atOrBefore: (ms) => cron.previousRuns(1, new Date(ms + 1))[0]?.getTime() ?? null
  }
  if (clock.after(nowMs) === null) throw new TollgateError('INVALID_CRON', `cron ${JSON.stringify(expression)} never fires after now`)
  return clock
}

/**
 * The ticks from `dueMs` (a tick) up to `nowMs`: how many there are and the latest. A stretch
 * longer than MAX_TICK_WALK is counted up to it, its latest tick found from `nowMs` backwards.
 */
export function ticksUpTo (clock: CronClock, dueMs: number, nowMs: number): { count: number, latestMs: number, counted: boolean } {
  let latest = dueMs
  let count = 1
  for (;;) {
    const next = clock.after(latest)
    if (next === null || next > nowMs) return { count, latestMs: latest, counted: true }
    if (count >= MAX_TICK_WALK) break
    latest = next
    count++
  }
  // Past the walk: the latest tick is the last one at or before now.
  return { count, latestMs: Math.max(latest, clock.atOrBefore(nowMs) ?? latest), counted: false }
}
