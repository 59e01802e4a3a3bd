/**
 * History append: after each round the provider-visible transcript gains the assistant's
 * tool-call message and then the ordered results, so the next request sees calls and results
 * in the order the model made them, whatever order they finished in.
 */
import type { ChatMessage, ProviderState } from '../providers/types.js'
import type { ParsedCall } from './parse.js'
import type { ToolSlot } from './results.js'

export interface RoundRecord {
  /** Assistant text for this response (protocol payloads included in text mode, as the model wrote them). */
  text: string
  native: boolean
  /** The calls as the model made them (before hooks and markers): history must echo the model. */
  calls: readonly ParsedCall[]
  slots: readonly ToolSlot[]
  providerState?: ProviderState
}

/** The id the provider knows a call by: its own, or ours for text-protocol calls. */
export function historyCallId (slot: ToolSlot): string {
  return slot.providerCallId ?? slot.callId
}

export function roundMessages (round: RoundRecord): ChatMessage[] {
  if (round.native) {
    const assistant: ChatMessage = {
      role: 'assistant',
      content: round.text.trim() === '' ? null : round.text,
      tool_calls: round.slots.map((s) => {
        const call = round.calls[s.index]
        return { id: historyCallId(s), name: call?.name ?? s.name, arguments: call?.rawArguments ?? JSON.stringify(call?.arguments ?? {}) }
      })
    }
    if (round.providerState !== undefined) assistant.provider_state = round.providerState
    const results = round.slots.map((s): ChatMessage => ({
      role: 'tool',
      tool_call_id: historyCallId(s),
      content: s.outcome?.modelText ?? ''
    }))
    return [assistant, ...results]
  }
  const blocks = round.slots.map((s) => `<tool_result name="${s.name}">\n${s.outcome?.modelText ?? ''}\n</tool_result>\n`).join('')
  const assistant: ChatMessage = { role: 'assistant', content: round.text }
  if (round.providerState !== undefined) assistant.provider_state = round.providerState
  return [
    assistant,
    { role: 'user', content: `[Tool results]\n${blocks}` }
  ]
}

export function appendRound (history: ChatMessage[], round: RoundRecord): void {
  history.push(...roundMessages(round))
}

/**
 * Keeps at most `max` messages, dropping the oldest first and then any leading non-user
 * messages, so the kept history never starts with tool results whose calls were cut off.
 */
export function trimHistory (history: ChatMessage[], max: number): ChatMessage[] {
  if (history.length <= max) return history
  let start = history.length - max
  while (start < history.length - 1 && history[start]?.role !== 'user') start++
  return history.slice(start)
}
