/**
 * Token usage of one turn: the provider-reported counts of its answered model calls, summed.
 * Tollgate never estimates tokens, so a call whose provider reported none is counted as such
 * (`unreported_calls`) instead of as zero, and a turn with no reported call has no usage at all.
 */
import type { TokenUsage } from '../../schemas/events.js'
import type { ChatUsage } from '../providers/types.js'
import { roundUsd } from '../providers/pricing.js'

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
  /** USD of the priced calls; absent in checkpoints written before prices were kept. */
  cost_usd?: number
  /** Answered calls whose cost is unknown (no price, or no usage reported). */
  unpriced?: number
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
  private cost = 0
  private unpriced = 0

  /** Continues from counters (a turn resumed after a restart). */
  static from (counts: UsageCounts | undefined): UsageTally {
    const tally = new UsageTally()
    if (counts !== undefined) {
      tally.prompt = counts.prompt
      tally.completion = counts.completion
      tally.reported = counts.reported
      tally.unreported = counts.unreported
      for (const [key] of DETAILS) if (counts[key] !== undefined) tally.details[key] = counts[key]
      // A checkpoint from before costs were kept cannot vouch for its calls' cost.
      tally.cost = counts.cost_usd ?? 0
      tally.unpriced = counts.cost_usd === undefined ? counts.reported + counts.unreported : counts.unpriced ?? 0
    }
    return tally
  }

  counts (): UsageCounts {
    return {
      prompt: this.prompt,
      completion: this.completion,
      reported: this.reported,
      unreported: this.unreported,
      ...this.details,
      cost_usd: this.cost,
      unpriced: this.unpriced
    }
  }

  /** One answered model call; `undefined`: its provider reported no usage. `cost`: its USD, null when unknown. */
  add (call: ChatUsage | undefined, cost: number | null = null): void {
    if (cost === null) this.unpriced += 1
    else this.cost = roundUsd(this.cost + cost)
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
      ...(this.details.reasoning === undefined ? {} : { reasoning_tokens: this.details.reasoning }),
      cost_usd: this.unpriced === 0 ? this.cost : null
    }
  }
}
