/**
 * When the SQL stores compact a finished turn (delta-runs.ts says how): which turns are worth it,
 * counted from the deltas each store writes, and how a failed compaction is tried again. Both
 * stores use these, so SQLite and PostgreSQL decide and retry alike (decisions 0278, 0280, 0281).
 */
import type { BusEnvelope } from '../core/envelope.js'
import { isDelta } from './delta-runs.js'

/**
 * A finished turn is compacted when it streamed at least two deltas, or when its answer is at
 * least this long (one delta holding it: the run then keeps its length only). Anything less saves
 * a few bytes for a pass's reads and writes, a cost every short turn would pay.
 */
export const COMPACT_TEXT_OVER = 512

/** A failed compaction is tried again this long after its failure, doubling each time... */
export const COMPACT_RETRY_MS = 1000
/** ...at most this many times; after that the turn stays queued (in the store) for the next start. */
export const COMPACT_RETRIES = 3

/** The deltas a store wrote per running turn, as far as it saw them: what a finished turn is judged by. */
export class StreamedDeltas {
  private readonly counts = new Map<string, number>()

  count (events: readonly BusEnvelope[]): void {
    for (const e of events) {
      if (isDelta(e)) this.counts.set(e.turn_id, (this.counts.get(e.turn_id) ?? 0) + 1)
    }
  }

  /** What the turn streamed is not known here (it streamed elsewhere before): its finish is worth compacting. */
  unknown (turnId: string): void {
    this.counts.set(turnId, Number.POSITIVE_INFINITY)
  }

  /** Whether the finished turn is worth compacting; forgets its count. */
  worthCompacting (turnId: string, finalText: string | undefined): boolean {
    const deltas = this.counts.get(turnId) ?? 0
    this.counts.delete(turnId)
    return deltas >= 2 || (finalText?.length ?? 0) >= COMPACT_TEXT_OVER
  }
}

/**
 * Failed compactions waiting to be tried again: each failure queues the turn again (`requeue`)
 * after a growing delay, COMPACT_RETRIES times at most; then it waits, queued in the store, for
 * the next start.
 */
export class CompactionRetries {
  private readonly timers = new Set<NodeJS.Timeout>()
  private readonly failures = new Map<string, number>()

  constructor (private readonly firstMs: number, private readonly requeue: (turnId: string) => void) {}

  /** Whether a retry is due later. */
  get pending (): boolean {
    return this.timers.size > 0
  }

  /** The turn's compaction failed. `keepAlive`: someone waits for the queue to empty, so the timer holds the process. */
  failed (turnId: string, keepAlive: boolean): void {
    const failed = (this.failures.get(turnId) ?? 0) + 1
    if (failed > COMPACT_RETRIES) {
      this.failures.delete(turnId)
      return
    }
    this.failures.set(turnId, failed)
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      this.requeue(turnId)
    }, this.firstMs * 2 ** (failed - 1))
    if (!keepAlive) timer.unref()
    this.timers.add(timer)
  }

  /** The turn was compacted (or another instance took it): its failures are forgotten. */
  succeeded (turnId: string): void {
    this.failures.delete(turnId)
  }

  /** Someone waits for the queue to empty: the retries hold the process until then. */
  keepAlive (): void {
    for (const timer of this.timers) timer.ref()
  }

  /** Drops every retry; answers the turns that were waiting for one (they stay queued in the store). */
  stop (): string[] {
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.clear()
    const waiting = [...this.failures.keys()]
    this.failures.clear()
    return waiting
  }
}
