/**
 * Token usage of one turn: the provider-reported counts of its answered model calls, summed.
 * Tollgate never estimates tokens, so a call whose provider reported none is counted as such
 * (`unreported_calls`) instead of as zero, and a turn with no reported call has no usage at all.
 */
import type { TokenUsage } from '../../schemas/events.js'
import type { ChatUsage } from '../providers/types.js'

export class UsageTally {
  private prompt = 0
  private completion = 0
  private reported = 0
  private unreported = 0

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
