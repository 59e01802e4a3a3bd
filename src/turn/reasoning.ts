/**
 * The model's reasoning as `reasoning.delta` events: streamed by the provider (thinking,
 * reasoning summaries, `reasoning_content`), split out of `<think>` blocks of the text, or whole
 * from an answer that did not stream. Never part of the visible text; not emitted at all for an
 * agent with `show_reasoning = false` (so it is not in the event log either).
 */
import type { ChatResponse } from '../providers/types.js'
import type { ResolvedAgentExecution, TurnState } from './context.js'
import { createThinkFilter } from './stream-filter.js'

export function emitReasoning (exec: ResolvedAgentExecution, state: TurnState, text: string): void {
  if (text === '' || !exec.knobs.showReasoning) return
  state.emit({ kind: 'reasoning.delta', text })
}

/** The inside of the think blocks of a whole answer's text. */
function thinkBlocksOf (text: string): string {
  return createThinkFilter().push(text).reasoning
}

/**
 * Reasoning of an answer that was not streamed live: what the provider reported apart (a JSON
 * answer), then the think blocks of its text when that text was not filtered as it streamed.
 */
export function emitAnswerReasoning (exec: ResolvedAgentExecution, state: TurnState, response: ChatResponse, textStreamed: boolean): void {
  if (response.reasoning !== undefined) emitReasoning(exec, state, response.reasoning)
  if (!textStreamed) emitReasoning(exec, state, thinkBlocksOf(response.text))
}
