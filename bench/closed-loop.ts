/**
 * Closed-loop load at a fixed concurrency, shared by every runner so they are measured the same
 * way: `concurrency` workers each run one turn after another. Turns finishing inside the
 * measurement window (after the warm-up) count toward throughput; turns started inside it give
 * the latencies (those still running at its end are awaited and kept).
 */
import { monotonicNs } from './ipc.js'

export interface LoopOptions {
  concurrency: number
  warmupMs: number
  durationMs: number
  /** One turn; resolves when it is done, throws when it failed. */
  turn: () => Promise<void>
}

export interface LoopResult {
  /** Turns completed inside the measurement window. */
  completed: number
  /** Every turn run, warm-up and drain included (for per-turn counters). */
  total: number
  errors: number
  firstError: string | null
  windowMs: number
  /** Turn latencies in ms. */
  latencies: number[]
}

const NS_PER_MS = 1_000_000

export async function runClosedLoop (options: LoopOptions): Promise<LoopResult> {
  const start = monotonicNs()
  const warmEnd = start + BigInt(Math.round(options.warmupMs * NS_PER_MS))
  const end = warmEnd + BigInt(Math.round(options.durationMs * NS_PER_MS))
  const latencies: number[] = []
  let completed = 0
  let total = 0
  let errors = 0
  let firstError: string | null = null

  const worker = async (): Promise<void> => {
    for (;;) {
      const t0 = monotonicNs()
      if (t0 >= end) return
      try {
        await options.turn()
      } catch (err) {
        errors++
        firstError ??= err instanceof Error ? err.message : String(err)
        continue
      }
      const t1 = monotonicNs()
      total++
      if (t1 >= warmEnd && t1 < end) completed++
      if (t0 >= warmEnd) latencies.push(Number(t1 - t0) / NS_PER_MS)
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, worker))
  return { completed, total, errors, firstError, windowMs: options.durationMs, latencies }
}
