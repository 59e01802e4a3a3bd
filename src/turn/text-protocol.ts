/**
 * Text tool-call protocol, for providers without native tool calling: parse calls out of the reply
 * text, detect failed attempts, clean visible text, and teach the protocol in the system prompt.
 */

export interface ParsedToolCall {
  /** Alias-mapped (`bash` → `shell`) and namespace-stripped (`functions.shell` → `shell`). */
  name: string
  arguments: Record<string, unknown>
  /** The provider's call id when the model supplied one. */
  id: string | null
  /** Set when the model's arguments could not be decoded; `arguments` is then `{}`. */
  argumentsError?: string
}

export interface TextParseResult {
  /** Visible prose around the calls, joined by '\n', trimmed. */
  text: string
  calls: ParsedToolCall[]
}

export { parseTextToolCalls } from './text-protocol-parse.js'
export { stripThinkBlocks, stripTerminalMarkers, stripToolResultBlocks } from './text-protocol-clean.js'
export { mapToolNameAlias } from './text-protocol-calls.js'
export { detectToolProtocolIssue } from './text-protocol-detect.js'
export { buildToolProtocolInstructions, type ToolProtocolSpec } from './text-protocol-prompt.js'
