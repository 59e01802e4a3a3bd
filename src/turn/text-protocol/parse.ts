/**
 * The text tool-call protocol parser: for providers without native tool calling, calls are read out
 * of the reply text. Order: whole-reply JSON envelope, then tags, then (only if still nothing) fences.
 */
import type { ParsedToolCall, TextParseResult } from './types.js'
import { callsFromJsonValue } from './calls.js'
import { stripTerminalMarkers, stripThinkBlocks } from './clean.js'
import { parseFencedCalls, parseTaggedCalls } from './framing.js'
import { isPlainObject, tryParseJson } from './json.js'

const EXAMPLE_WORDS = ['example', 'sample']
const EXAMPLE_WORDS_ZH = ['示例', '例如', '比如', '举例', '例子', '比方说', '譬如']

export interface ResponseAnalysis extends TextParseResult {
  /** The reply after think blocks and terminal markers were removed, trimmed. */
  cleaned: string
  /** Where the calls came from; null when there are none. */
  source: 'json' | 'framed' | null
  /** Framed calls parsed, but the prose presents them as an example, so none are returned. */
  exampleWithheld: boolean
}

/**
 * Every frame (tag or fence) and every JSON envelope needs one of these characters: text without
 * any (most final answers) can neither carry a call nor look like a failed attempt at one.
 */
const PROTOCOL_CHARACTERS = /[<`{[]/

export function mayHoldToolProtocol (text: string): boolean {
  return PROTOCOL_CHARACTERS.test(text)
}

/** Documentation of the protocol (ours or the model's own) must never run. */
export function mentionsExample (text: string): boolean {
  const lower = text.toLowerCase()
  return EXAMPLE_WORDS.some((word) => lower.includes(word)) || EXAMPLE_WORDS_ZH.some((word) => text.includes(word))
}

function parseWholeJson (cleaned: string): { text: string, calls: ParsedToolCall[] } | null {
  if (!cleaned.startsWith('{') && !cleaned.startsWith('[')) return null
  const parsed = tryParseJson(cleaned)
  if (!parsed.ok) return null
  const calls = callsFromJsonValue(parsed.value, { requireCallShape: true })
  if (calls.length === 0) return null
  const content = isPlainObject(parsed.value) && typeof parsed.value.content === 'string' ? parsed.value.content.trim() : ''
  return { text: content, calls }
}

export function analyseResponse (response: string): ResponseAnalysis {
  const cleaned = stripTerminalMarkers(stripThinkBlocks(response)).trim()
  const none: ResponseAnalysis = { text: cleaned, calls: [], cleaned, source: null, exampleWithheld: false }
  if (cleaned === '') return none

  const whole = parseWholeJson(cleaned)
  if (whole !== null) return { ...whole, cleaned, source: 'json', exampleWithheld: false }

  let framed = parseTaggedCalls(cleaned)
  if (framed.calls.length === 0) framed = parseFencedCalls(cleaned)
  if (framed.calls.length === 0) return none

  const text = framed.texts.join('\n').trim()
  if (mentionsExample(text)) return { ...none, exampleWithheld: true }
  return { text, calls: framed.calls, cleaned, source: 'framed', exampleWithheld: false }
}

export function parseTextToolCalls (response: string): TextParseResult {
  const { text, calls } = analyseResponse(response)
  return { text, calls }
}
