/**
 * Loop detection over the successful tool calls of one turn. Three stuck patterns escalate from a
 * nudge (warning) to a louder nudge (block; the output is still delivered) to ending the turn
 * (break). One detector lives for one turn; the caller feeds it successful calls only.
 */
import { canonicalJson, digest } from '../core/json/canonical.js'

export interface LoopDetectorOptions {
  enabled: boolean
  windowSize: number
  maxRepeats: number
}

export type LoopVerdict = { kind: 'ok' } | { kind: 'warning' | 'block' | 'break', message: string }

type Severity = 'warning' | 'block' | 'break'

/** One successful call as the detector remembers it (hashes only); what a checkpoint keeps. */
export interface DetectorRecord {
  name: string
  argsHash: string
  resultHash: string
}

type CallRecord = DetectorRecord

const PING_PONG_MIN_CYCLES = 4
const NO_PROGRESS_MIN_CALLS = 5

const SEVERITY_ADVICE: Record<Severity, string> = {
  warning: '. Try a different approach.',
  block: '. Change strategy now; repeating this pattern again will end the turn.',
  break: ''
}

export class LoopDetector {
  readonly #options: LoopDetectorOptions
  readonly #window: CallRecord[] = []

  constructor (opts: LoopDetectorOptions) {
    this.#options = { ...opts }
  }

  /** The remembered window, oldest first. */
  snapshot (): DetectorRecord[] {
    return this.#window.map((r) => ({ ...r }))
  }

  /** Continues from a snapshot (a turn resumed after a restart). */
  restore (records: readonly DetectorRecord[]): void {
    this.#window.splice(0, this.#window.length, ...records.slice(-this.#options.windowSize).map((r) => ({ ...r })))
  }

  record (toolName: string, args: unknown, resultText: string): LoopVerdict {
    if (!this.#options.enabled) return { kind: 'ok' }
    this.#window.push({ name: toolName, argsHash: digest(canonicalJson(args)), resultHash: digest(resultText) })
    while (this.#window.length > this.#options.windowSize) this.#window.shift()
    return this.#exactRepeat() ?? this.#pingPong() ?? this.#noProgress() ?? { kind: 'ok' }
  }

  #exactRepeat (): LoopVerdict | undefined {
    const last = this.#window.at(-1)
    if (last === undefined) return undefined
    let count = 0
    for (let i = this.#window.length - 1; i >= 0; i--) {
      const entry = this.#window[i]
      if (entry === undefined || entry.name !== last.name || entry.argsHash !== last.argsHash) break
      count++
    }
    // A lone call is not a repeat, whatever a tiny max_repeats would otherwise imply.
    if (count < 2) return undefined
    return judge(count, this.#options.maxRepeats, `Tool '${last.name}' called ${count} times in a row with identical arguments`)
  }

  /** Only tool names count: alternating with fresh args each time is still going in circles. */
  #pingPong (): LoopVerdict | undefined {
    const newest = this.#window.length - 1
    const a = this.#window[newest]?.name
    const b = this.#window[newest - 1]?.name
    if (a === undefined || b === undefined || a === b) return undefined
    let cycles = 0
    while (this.#window[newest - 2 * cycles]?.name === a && this.#window[newest - 2 * cycles - 1]?.name === b) {
      cycles++
    }
    return judge(cycles, PING_PONG_MIN_CYCLES, `Tools '${a}' and '${b}' have been alternating for ${cycles} cycles`)
  }

  /** Counted across the whole window so interleaving unrelated calls does not hide the pattern. */
  #noProgress (): LoopVerdict | undefined {
    const last = this.#window.at(-1)
    if (last === undefined) return undefined
    const same = this.#window.filter((entry) => entry.name === last.name && entry.resultHash === last.resultHash)
    // Identical args every time is an exact repeat, reported (or not) by that rule instead.
    if (new Set(same.map((entry) => entry.argsHash)).size < 2) return undefined
    return judge(same.length, NO_PROGRESS_MIN_CALLS,
      `Tool '${last.name}' called ${same.length} times with different arguments but identical results (no progress)`)
  }
}

/** Every pattern escalates the same way: warn at the threshold, block one past it, break two past it. */
function judge (count: number, warnAt: number, finding: string): LoopVerdict | undefined {
  if (count < warnAt) return undefined
  const kind: Severity = count >= warnAt + 2 ? 'break' : count > warnAt ? 'block' : 'warning'
  return { kind, message: finding + SEVERITY_ADVICE[kind] }
}
