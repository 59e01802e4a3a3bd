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
}

export class UsageTally {
  private prompt = 0
  private completion = 0
  private reported = 0
  private unreported = 0

  /** Continues from counters (a turn resumed after a restart). */
  static from (counts: UsageCounts | undefined): UsageTally {
    const tally = new UsageTally()
    if (counts !== undefined) {
      tally.prompt = counts.prompt
      tally.completion = counts.completion
      tally.reported = counts.reported
      tally.unreported = counts.unreported
    }
    return tally
  }

  counts (): UsageCounts {
    return { prompt: this.prompt, completion: this.completion, reported: this.reported, unreported: this.unreported }
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
  }

  /** The sums so far; undefined until some call reported usage. */
  current (): TokenUsage | undefined {
    if (this.reported === 0) return undefined
    return {
      prompt_tokens: this.prompt,
      completion_tokens: this.completion,
      total_tokens: this.prompt + this.completion,
      reported_calls: this.reported,
      unreported_calls: this.unreported
    }
  }
}
