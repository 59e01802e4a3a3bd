/**
 * Turning decoded JSON into parsed tool calls: OpenAI-like envelopes, name aliases, argument decoding.
 */
import type { ParsedToolCall } from './types.js'
import { isPlainObject, tryParseJson } from './json.js'

/**
 * Names models commonly invent for the built-in tools. Only capability-preserving aliases: the
 * reference also maps browser/web_search to `shell`, which would widen what a call can do.
 */
const NAME_ALIASES: ReadonlyMap<string, string> = new Map([
  ['bash', 'shell'],
  ['sh', 'shell'],
  ['exec', 'shell'],
  ['command', 'shell'],
  ['cmd', 'shell'],
  ['fileread', 'file_read'],
  ['readfile', 'file_read'],
  ['read_file', 'file_read'],
  ['file', 'file_read'],
  ['filewrite', 'file_write'],
  ['writefile', 'file_write'],
  ['write_file', 'file_write'],
  ['http', 'http_request'],
  ['fetch', 'http_request'],
  ['curl', 'http_request'],
  ['wget', 'http_request']
])

/** Double-encoded arguments are unwrapped this deep at most; deeper values are left as they are. */
const MAX_UNWRAP_DEPTH = 32

/** Keeps the last `.`-segment (`functions.shell` → `shell`) and maps known aliases, case-insensitively. */
export function mapToolNameAlias (name: string): string {
  const trimmed = name.trim()
  const segment = trimmed.slice(trimmed.lastIndexOf('.') + 1).trim()
  return NAME_ALIASES.get(segment.toLowerCase()) ?? segment
}

function nonEmptyString (value: unknown): string | null {
  if (typeof value !== 'string') return null
  const trimmed = value.trim()
  return trimmed === '' ? null : trimmed
}

function firstPresent (...values: unknown[]): unknown {
  return values.find((value) => value !== undefined && value !== null)
}

function looksLikeJsonContainer (text: string): boolean {
  const trimmed = text.trim()
  return (trimmed.startsWith('{') && trimmed.endsWith('}')) || (trimmed.startsWith('[') && trimmed.endsWith(']'))
}

/**
 * Some models (Gemini) JSON-encode the whole argument object more than once: decode while the
 * value is still a JSON-container string. String values INSIDE the object are left alone:
 * `file_write` content that happens to be JSON must arrive as the text the model wrote.
 */
function unwrapEncodedArguments (value: unknown, depth: number): unknown {
  if (depth > MAX_UNWRAP_DEPTH || typeof value !== 'string' || !looksLikeJsonContainer(value)) return value
  const parsed = tryParseJson(value)
  return parsed.ok ? unwrapEncodedArguments(parsed.value, depth + 1) : value
}

interface DecodedArguments { value: Record<string, unknown>, error?: string }

function decodeArguments (raw: unknown): DecodedArguments {
  if (raw === undefined || raw === null) return { value: {} }
  let decoded: unknown = raw
  if (typeof raw === 'string') {
    // OpenAI-style providers send "" for a call without parameters.
    if (raw.trim() === '') return { value: {} }
    const parsed = tryParseJson(raw)
    if (!parsed.ok) return { value: {}, error: `arguments are not valid JSON: ${parsed.error}` }
    decoded = parsed.value
  }
  const unwrapped = unwrapEncodedArguments(decoded, 0)
  if (!isPlainObject(unwrapped)) return { value: {}, error: 'arguments must be a JSON object' }
  return { value: unwrapped }
}

/** True for `{function: {name}}` or `{name, arguments|parameters}`: the shape a bare JSON reply needs to count as a call. */
export function isCallShaped (value: unknown): boolean {
  if (!isPlainObject(value)) return false
  if (isPlainObject(value.function) && nonEmptyString(value.function.name) !== null) return true
  return nonEmptyString(value.name) !== null && ('arguments' in value || 'parameters' in value)
}

/** One call object (`{id?, type?, function: {name, arguments}}` or `{name, arguments}`), or null when it names no tool. */
export function normalizeCall (value: unknown): ParsedToolCall | null {
  if (!isPlainObject(value)) return null
  const fn = isPlainObject(value.function) ? value.function : undefined
  const rawName = nonEmptyString(fn?.name) ?? nonEmptyString(value.name)
  if (rawName === null) return null
  const name = mapToolNameAlias(rawName)
  if (name === '') return null
  const id = nonEmptyString(fn?.id) ?? nonEmptyString(value.id) ?? nonEmptyString(value.tool_call_id) ?? nonEmptyString(value.call_id)
  const args = decodeArguments(firstPresent(fn?.arguments, fn?.parameters, value.arguments, value.parameters))
  if (args.error === undefined) return { name, arguments: args.value, id }
  return { name, arguments: args.value, id, argumentsError: args.error }
}

function normalizeAll (items: readonly unknown[]): ParsedToolCall[] {
  return items.map(normalizeCall).filter((call): call is ParsedToolCall => call !== null)
}

export interface CallExtraction {
  /** A bare JSON reply must look like a call; inside tags the framing already says it is one. */
  requireCallShape: boolean
}

/** Calls in one decoded JSON value: a `tool_calls` envelope, an array of calls, or a single call. */
export function callsFromJsonValue (value: unknown, options: CallExtraction): ParsedToolCall[] {
  if (isPlainObject(value) && Array.isArray(value.tool_calls)) {
    const calls = normalizeAll(value.tool_calls)
    if (calls.length > 0) return calls
  }
  if (Array.isArray(value)) {
    if (options.requireCallShape && (value.length === 0 || !value.every(isCallShaped))) return []
    return normalizeAll(value)
  }
  if (options.requireCallShape && !isCallShaped(value)) return []
  const call = normalizeCall(value)
  return call === null ? [] : [call]
}
