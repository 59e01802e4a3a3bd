/**
 * Per-connection frame rate limit: a token bucket (`burst` frames, refilled at `perSecond`).
 * A refused frame is answered, not dropped silently; a client that keeps sending anyway piles up
 * refusals faster than they are forgiven (at the same rate) and is told to go away.
 */

export interface FrameRateOptions {
  perSecond: number
  burst: number
  /** Outstanding refusals tolerated before the connection must be closed. */
  maxRejected: number
  now?: () => number
}

export type FrameVerdict = 'accept' | 'reject' | 'close'

export class FrameRateLimiter {
  private tokens: number
  private rejected = 0
  private last: number
  private readonly now: () => number

  constructor (private readonly options: FrameRateOptions) {
    this.now = options.now ?? (() => performance.now())
    this.tokens = options.burst
    this.last = this.now()
  }

  take (): FrameVerdict {
    const now = this.now()
    const refill = Math.max(0, (now - this.last) / 1000) * this.options.perSecond
    this.last = now
    this.tokens = Math.min(this.options.burst, this.tokens + refill)
    this.rejected = Math.max(0, this.rejected - refill)
    if (this.tokens >= 1) {
      this.tokens -= 1
      return 'accept'
    }
    this.rejected += 1
    return this.rejected > this.options.maxRejected ? 'close' : 'reject'
  }
}
