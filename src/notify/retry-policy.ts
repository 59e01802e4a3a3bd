/**
 * When a failed delivery is tried again: exponential backoff with jitter, until its give-up time.
 * Jitter ("equal jitter": half the wait fixed, half random) keeps many deliveries that failed
 * together — a receiver that was down — from all coming back at the same moment.
 */
export interface RetryPolicy {
  initialBackoffMs: number
  maxBackoffMs: number
}

/**
 * The time of the next attempt after `attempts` failed ones, or null when the delivery is given up
 * (its give-up time has passed). The last attempt is made at the give-up time at the latest.
 */
export function nextAttemptMs (
  policy: RetryPolicy, attempts: number, nowMs: number, giveUpMs: number, random: () => number = Math.random
): number | null {
  if (nowMs >= giveUpMs) return null
  const ceiling = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** Math.max(0, attempts - 1))
  const wait = ceiling / 2 + random() * ceiling / 2
  return Math.min(nowMs + Math.round(wait), giveUpMs)
}
