/**
 * Text tool-call protocol, for providers without native tool calling: parse calls out of the reply
 * text, detect failed attempts, clean visible text, and teach the protocol in the system prompt.
 */

export type { ParsedToolCall, TextParseResult } from './types.js'
export { mayHoldToolProtocol, parseTextToolCalls } from './parse.js'
export { stripThinkBlocks, stripTerminalMarkers, stripToolResultBlocks } from './clean.js'
export { mapToolNameAlias } from './calls.js'
export { detectToolProtocolIssue } from './detect.js'
export { buildToolProtocolInstructions, type ToolProtocolSpec } from './prompt.js'
