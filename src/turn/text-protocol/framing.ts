/**
 * Calls framed by tags (`<tool_call>…</tool_call>` and aliases) or by fences (```` ```tool_call ````,
 * ```` ```tool <name> ````). Only framed JSON can become a call: JSON loose in prose never does.
 */
import type { ParsedToolCall } from './types.js'
import { callsFromJsonValue, isCallShaped, normalizeCall } from './calls.js'
import { extractJsonValues, findBalancedEnd, isPlainObject, tryParseJson } from './json.js'

export interface FramedParse {
  /** Visible prose segments, trimmed and non-empty, in order. */
  texts: string[]
  calls: ParsedToolCall[]
}

const TAG_NAMES = 'tool_calls|tool_call|toolcall|tool-call|invoke'
const OPEN_TAG = `<(${TAG_NAMES})(?:\\s[^<>]*)?>`
const ANY_CLOSE_TAG = `</(?:${TAG_NAMES})\\s*>`
const OPEN_FENCE = '```[ \\t]*(?:(tool_calls?|tool-call|toolcall|invoke)\\b[ \\t]*(?:\\r?\\n)?|tool[ \\t]+([A-Za-z0-9_.:-]+)[ \\t]*(?:\\r?\\n|$))'
/** A closing fence starts its line; a fence opener such as ```` ```tool_call ```` is not a close. */
const CLOSE_FENCE = '^[ \\t]*```(?![\\w-])'
/** An opening markdown fence directly after an unclosed tag, e.g. `<tool_call>```json`. */
const LEADING_FENCE = /^\s*```[A-Za-z]*[ \t]*\r?\n/
const TRAILING_FENCE = /^\s*```/

type Finder = (from: number) => RegExpExecArray | null

/**
 * The first match at or after a position. A miss is remembered, so asking again for a later
 * position costs nothing: this is what keeps the loops linear on text full of unclosed tags.
 */
function createFinder (text: string, source: string, flags = 'gi'): Finder {
  const pattern = new RegExp(source, flags)
  let last: RegExpExecArray | null = null
  let lastFrom = -1
  let missFrom = Number.POSITIVE_INFINITY
  return (from) => {
    if (from >= missFrom) return null
    if (last !== null && lastFrom <= from && last.index >= from) return last
    pattern.lastIndex = from
    const found = pattern.exec(text)
    if (found === null) missFrom = from
    else {
      last = found
      lastFrom = from
    }
    return found
  }
}

function earliest (a: RegExpExecArray | null, b: RegExpExecArray | null): RegExpExecArray | null {
  if (a === null) return b
  if (b === null) return a
  return b.index < a.index ? b : a
}

function pushText (texts: string[], segment: string): void {
  const trimmed = segment.trim()
  if (trimmed !== '') texts.push(trimmed)
}

function callsFromBody (body: string): ParsedToolCall[] {
  return extractJsonValues(body).flatMap((value) => callsFromJsonValue(value, { requireCallShape: false }))
}

/** An unclosed tag still counts when a balanced JSON call follows it directly. */
function recoverUnclosedCall (text: string, from: number): { calls: ParsedToolCall[], end: number } | null {
  let start = from
  const fence = LEADING_FENCE.exec(text.slice(start, start + 64))
  if (fence !== null) start += fence[0].length
  while (start < text.length && /\s/.test(text[start] ?? '')) start++
  if (text[start] !== '{' && text[start] !== '[') return null
  const end = findBalancedEnd(text, start)
  if (end < 0) return null
  const parsed = tryParseJson(text.slice(start, end))
  if (!parsed.ok) return null
  const calls = callsFromJsonValue(parsed.value, { requireCallShape: false })
  if (calls.length === 0) return null
  const trailing = TRAILING_FENCE.exec(text.slice(end, end + 64))
  return { calls, end: trailing === null ? end : end + trailing[0].length }
}

/**
 * The tag loop: the earliest open tag wins; text before it is visible. Its body ends at the matching
 * close tag, else at any alias close tag, else after a balanced JSON value; failing all three the
 * loop stops and the rest stays text. A closed tag whose body holds no call stays visible as is.
 */
export function parseTaggedCalls (text: string): FramedParse {
  const findOpen = createFinder(text, OPEN_TAG)
  const findAnyClose = createFinder(text, ANY_CLOSE_TAG)
  const matchingClose = new Map<string, Finder>()
  const texts: string[] = []
  const calls: ParsedToolCall[] = []
  let pos = 0
  for (;;) {
    const open = findOpen(pos)
    if (open === null) break
    pushText(texts, text.slice(pos, open.index))
    const bodyStart = open.index + open[0].length
    const tag = (open[1] ?? '').toLowerCase()
    let findClose = matchingClose.get(tag)
    if (findClose === undefined) {
      findClose = createFinder(text, `</${tag}\\s*>`)
      matchingClose.set(tag, findClose)
    }
    const close = findClose(bodyStart) ?? findAnyClose(bodyStart)
    if (close !== null) {
      const closeEnd = close.index + close[0].length
      const found = callsFromBody(text.slice(bodyStart, close.index))
      if (found.length > 0) calls.push(...found)
      else pushText(texts, text.slice(open.index, closeEnd))
      pos = closeEnd
      continue
    }
    const recovered = recoverUnclosedCall(text, bodyStart)
    if (recovered === null) {
      pos = open.index
      break
    }
    calls.push(...recovered.calls)
    pos = recovered.end
  }
  pushText(texts, text.slice(pos))
  return { texts, calls }
}

function callsFromToolNameFence (name: string, body: string): ParsedToolCall[] {
  const trimmed = body.trim()
  let args: unknown = {}
  if (trimmed !== '') {
    const parsed = tryParseJson(trimmed)
    if (!parsed.ok || !isPlainObject(parsed.value)) return []
    if (isCallShaped(parsed.value)) return callsFromJsonValue(parsed.value, { requireCallShape: true })
    args = parsed.value
  }
  const call = normalizeCall({ name, arguments: args })
  return call === null ? [] : [call]
}

/**
 * Fenced calls: ```` ```tool_call ```` / `tool-call` / `toolcall` / `invoke` blocks, closed by a fence
 * or a closing tag, and ```` ```tool <name> ```` blocks whose body is the JSON arguments.
 */
export function parseFencedCalls (text: string): FramedParse {
  const findFence = createFinder(text, OPEN_FENCE)
  const findCloseFence = createFinder(text, CLOSE_FENCE, 'gim')
  const findAnyClose = createFinder(text, ANY_CLOSE_TAG)
  const texts: string[] = []
  const calls: ParsedToolCall[] = []
  let pos = 0
  for (;;) {
    const open = findFence(pos)
    if (open === null) break
    pushText(texts, text.slice(pos, open.index))
    const bodyStart = open.index + open[0].length
    const close = earliest(findCloseFence(bodyStart), findAnyClose(bodyStart))
    const bodyEnd = close === null ? text.length : close.index
    const segmentEnd = close === null ? text.length : close.index + close[0].length
    const body = text.slice(bodyStart, bodyEnd)
    const toolName = open[2]
    const found = toolName === undefined ? callsFromBody(body) : callsFromToolNameFence(toolName, body)
    if (found.length > 0) calls.push(...found)
    else pushText(texts, text.slice(open.index, segmentEnd))
    pos = segmentEnd
  }
  pushText(texts, text.slice(pos))
  return { texts, calls }
}
