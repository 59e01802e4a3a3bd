/**
 * When a failed model call is tried again, how long to wait first, and the one deadline that
 * bounds the whole call (attempts, waits and a stream that keeps trickling) together.
 */
import { setTimeout as wait } from 'node:timers/promises'

export interface RetryPolicy {
  maxRetries: number
  initialDelayMs: number
  /** Cap of a backoff; a provider asking (Retry-After) for longer is not retried. */
  maxDelayMs: number
}

/** A Retry-After header (delta-seconds or HTTP date) as milliseconds from now; undefined if absent or unreadable. */
export function parseRetryAfter (value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim()
  if (text === undefined || text === '') return undefined
  if (/^\d+$/.test(text)) return Number(text) * 1000
  // An HTTP date names its weekday and month; Date.parse alone would also take "-1" or "1.5".
  const at = /[a-z]{3}/i.test(text) ? Date.parse(text) : Number.NaN
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/**
 * The pause before retry number `retry` (0 for the first), or null when the call must not be
 * retried: retries used up, or the provider asks to wait longer than the cap. Backoff doubles from
 * `initialDelayMs`, capped, jittered to 50-100 % so many gateways do not retry in lockstep; a
 * Retry-After is honoured as a minimum.
 */
export function retryDelay (
  policy: RetryPolicy, retry: number, retryAfterMs: number | undefined, random: () => number = Math.random
): number | null {
  if (retry >= policy.maxRetries) return null
  if (retryAfterMs !== undefined && retryAfterMs > policy.maxDelayMs) return null
  const backoff = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** retry)
  return Math.max(retryAfterMs ?? 0, Math.round(backoff * (0.5 + random() / 2)))
}

/** The total deadline of one call, tied to the caller's signal (a turn's cancellation). */
export interface CallDeadline {
  /** Aborts when the caller aborts or the deadline passes; give it to every request and wait. */
  readonly signal: AbortSignal
  /** True once the deadline (not the caller) aborted the call. */
  expired (): boolean
  remainingMs (): number
  /** Resolves after `ms`, or at once when the call is aborted. */
  pause (ms: number): Promise<void>
  dispose (): void
}

export function callDeadline (totalMs: number, caller: AbortSignal): CallDeadline {
  const controller = new AbortController()
  const endsAt = Date.now() + totalMs
  let expired = false
  const onCallerAbort = (): void => { controller.abort(caller.reason) }
  if (caller.aborted) onCallerAbort()
  else caller.addEventListener('abort', onCallerAbort, { once: true })
  const timer = setTimeout(() => {
    expired = true
    controller.abort(new Error(`the call took longer than ${totalMs} ms`))
  }, totalMs)
  return {
    signal: controller.signal,
    expired: () => expired,
    remainingMs: () => endsAt - Date.now(),
    pause: async (ms) => { await wait(ms, undefined, { signal: controller.signal }).catch(() => {}) },
    dispose: () => {
      clearTimeout(timer)
      caller.removeEventListener('abort', onCallerAbort)
    }
  }
}
