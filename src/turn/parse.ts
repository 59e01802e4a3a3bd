/**
 * Tool-call parsing: native and text-protocol calls normalised into one ParsedCall shape, with the
 * provider's call id when there is one. Malformed arguments are carried as an error, never
 * silently replaced by `{}`: the model gets an error result it can correct. So are arguments
 * past the configured depth and length: nothing after parsing (checkpoints, events, signatures,
 * scrubbing) has to survive a value nested thousands of levels deep.
 */
import { exceededBound, type JsonBounds } from '../core/json/bounds.js'
import type { ChatResponse, ChatToolCall } from '../providers/types.js'
import {
  detectToolProtocolIssue, mayHoldToolProtocol, parseTextToolCalls, stripTerminalMarkers, stripThinkBlocks, stripToolResultBlocks
} from './text-protocol/index.js'

export interface ParsedCall {
  name: string
  arguments: Record<string, unknown>
  providerCallId: string | null
  argumentsError?: string
  /** Native calls: the argument text exactly as the model sent it. */
  rawArguments?: string
}

export interface ParsedResponse {
  calls: ParsedCall[]
  /** True when the calls came from structured provider tool calls. */
  native: boolean
  /** Text the user should see for this response (protocol payloads removed). */
  displayText: string
  /** Response text after think/terminal-marker stripping, as the model wrote it. */
  text: string
  /** The response looked like a tool-call attempt that could not be parsed. */
  parseIssue: boolean
}

export interface ParseOptions {
  /** Names advertised this iteration (exact); empty when no tools were offered. */
  advertised: ReadonlySet<string>
  strict: boolean
  bounds: JsonBounds
}

/** The call's arguments, or none and why, when they exceed the bounds. */
function bounded (args: Pick<ParsedCall, 'arguments' | 'argumentsError'>, bounds: JsonBounds): Pick<ParsedCall, 'arguments' | 'argumentsError'> {
  if (args.argumentsError !== undefined) return args
  const exceeded = exceededBound(args.arguments, bounds)
  return exceeded === null ? args : { arguments: {}, argumentsError: `arguments ${exceeded}` }
}

function parseNativeArguments (call: ChatToolCall): Pick<ParsedCall, 'arguments' | 'argumentsError'> {
  const raw = call.arguments.trim()
  if (raw === '') return { arguments: {} }
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch (err) {
    return { arguments: {}, argumentsError: `arguments are not valid JSON: ${(err as Error).message}` }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { arguments: {}, argumentsError: 'arguments must be a JSON object' }
  }
  return { arguments: value as Record<string, unknown> }
}

export function parseResponse (response: ChatResponse, options: ParseOptions): ParsedResponse {
  const text = stripTerminalMarkers(stripThinkBlocks(response.text))
  const haveTools = options.advertised.size > 0

  // Native calls count only when this iteration advertised tools; otherwise the model is
  // calling something it was never offered.
  if (haveTools && response.toolCalls.length > 0) {
    const calls = response.toolCalls.map((c): ParsedCall => {
      const parsed = bounded(parseNativeArguments(c), options.bounds)
      const call: ParsedCall = { name: c.name.trim(), arguments: parsed.arguments, providerCallId: c.id === '' ? null : c.id, rawArguments: c.arguments }
      if (parsed.argumentsError !== undefined) call.argumentsError = parsed.argumentsError
      return call
    })
    return { calls, native: true, displayText: stripToolResultBlocks(text).trim(), text, parseIssue: false }
  }

  // Strict mode reads no calls out of text; and text with no frame or JSON character holds none.
  if (options.strict || !mayHoldToolProtocol(text)) {
    return { calls: [], native: false, displayText: stripToolResultBlocks(text).trim(), text, parseIssue: false }
  }

  const lowerAdvertised = new Map([...options.advertised].map((n) => [n.toLowerCase(), n]))
  if (haveTools) {
    const parsed = parseTextToolCalls(text)
    const calls = parsed.calls.flatMap((c): ParsedCall[] => {
      const name = lowerAdvertised.get(c.name.toLowerCase())
      if (name === undefined) return []
      const args = bounded(c, options.bounds)
      const call: ParsedCall = { name, arguments: args.arguments, providerCallId: c.id }
      if (args.argumentsError !== undefined) call.argumentsError = args.argumentsError
      return [call]
    })
    if (calls.length > 0) {
      return { calls, native: false, displayText: stripToolResultBlocks(parsed.text).trim(), text, parseIssue: false }
    }
  }
  const parseIssue = detectToolProtocolIssue(text, new Set(lowerAdvertised.keys()))
  return { calls: [], native: false, displayText: stripToolResultBlocks(text).trim(), text, parseIssue }
}
