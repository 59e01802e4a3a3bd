/**
 * Token usage of one turn: the provider-reported counts of its answered model calls, summed.
 * Tollgate never estimates tokens, so a call whose provider reported none is counted as such
 * (`unreported_calls`) instead of as zero, and a turn with no reported call has no usage at all.
 */
import type { TokenUsage } from '../../schemas/events.js'
import type { ChatUsage } from '../providers/types.js'

/** The tally's counters, as a checkpoint keeps them. */
export interface UsageCounts {
  prompt: number
  completion: number
  reported: number
  unreported: number
  /** Summed only from calls that reported them; absent until one did. */
  cache_read?: number
  cache_write?: number
  reasoning?: number
}

type DetailKey = 'cache_read' | 'cache_write' | 'reasoning'

/** Detail counts a provider may report beside input and output, and where each is summed. */
const DETAILS: ReadonlyArray<[DetailKey, 'cache_read_tokens' | 'cache_write_tokens' | 'reasoning_tokens']> = [
  ['cache_read', 'cache_read_tokens'], ['cache_write', 'cache_write_tokens'], ['reasoning', 'reasoning_tokens']
]

export class UsageTally {
  private prompt = 0
  private completion = 0
  private reported = 0
  private unreported = 0
  private readonly details: Partial<Record<DetailKey, number>> = {}

  /** Continues from counters (a turn resumed after a restart). */
  static from (counts: UsageCounts | undefined): UsageTally {
    const tally = new UsageTally()
    if (counts !== undefined) {
      tally.prompt = counts.prompt
      tally.completion = counts.completion
      tally.reported = counts.reported
      tally.unreported = counts.unreported
      for (const [key] of DETAILS) if (counts[key] !== undefined) tally.details[key] = counts[key]
    }
    return tally
  }

  counts (): UsageCounts {
    return { prompt: this.prompt, completion: this.completion, reported: this.reported, unreported: this.unreported, ...this.details }
  }

  /** One answered model call; `undefined`: its provider reported no usage. */
  add (call: ChatUsage | undefined): void {
    if (call === undefined) {
      this.unreported += 1
      return
    }
    this.prompt += call.input_tokens
    this.completion += call.output_tokens
    this.reported += 1
    for (const [key, field] of DETAILS) {
      const n = call[field]
      if (n !== undefined) this.details[key] = (this.details[key] ?? 0) + n
    }
  }

  /** The sums so far; undefined until some call reported usage. */
  current (): TokenUsage | undefined {
    if (this.reported === 0) return undefined
    return {
      prompt_tokens: this.prompt,
      completion_tokens: this.completion,
      total_tokens: this.prompt + this.completion,
      reported_calls: this.reported,
      unreported_calls: this.unreported,
      ...(this.details.cache_read === undefined ? {} : { cache_read_tokens: this.details.cache_read }),
      ...(this.details.cache_write === undefined ? {} : { cache_write_tokens: this.details.cache_write }),
      ...(this.details.reasoning === undefined ? {} : { reasoning_tokens: this.details.reasoning })
    }
  }
}
