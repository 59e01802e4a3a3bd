/**
 * Live-text hygiene for streamed model output: reasoning inside <think>…</think> (or
 * <thinking>…</thinking>) never reaches the visible text, even when a tag is split across
 * chunks; it is handed back apart, for `reasoning.delta`.
 */
import { isBlankAt } from '../core/blank.js'

const OPEN = ['<think>', '<thinking>']
const CLOSE = ['</think>', '</thinking>']

function partialSuffix (text: string, tags: readonly string[]): number {
  let keep = 0
  for (const tag of tags) {
    for (let n = Math.min(tag.length - 1, text.length); n > keep; n--) {
      if (tag.startsWith(text.slice(text.length - n).toLowerCase())) {
        keep = n
        break
      }
    }
  }
  return keep
}

function findTag (text: string, tags: readonly string[]): { at: number, length: number } | null {
  const lower = text.toLowerCase()
  let best: { at: number, length: number } | null = null
  for (const tag of tags) {
    const at = lower.indexOf(tag)
    if (at !== -1 && (best === null || at < best.at)) best = { at, length: tag.length }
  }
  return best
}

export interface FilteredText {
  /** Text that may be shown now (possibly empty). */
  visible: string
  /** Reasoning (the inside of think blocks) complete so far (possibly empty). */
  reasoning: string
}

export interface StreamFilter {
  push (chunk: string): FilteredText
}

export function createThinkFilter (): StreamFilter {
  let inside = false
  let pending = ''
  return {
    push (chunk) {
      // Every tag begins with `<`: plain text outside a block is all visible, as it came.
      if (!inside && pending === '' && !chunk.includes('<')) return { visible: chunk, reasoning: '' }
      let text = pending + chunk
      pending = ''
      let visible = ''
      let reasoning = ''
      for (;;) {
        const tag = findTag(text, inside ? CLOSE : OPEN)
        if (tag === null) {
          const keep = partialSuffix(text, inside ? CLOSE : OPEN)
          if (inside) reasoning += text.slice(0, text.length - keep)
          else visible += text.slice(0, text.length - keep)
          pending = text.slice(text.length - keep)
          return { visible, reasoning }
        }
        if (inside) reasoning += text.slice(0, tag.at)
        else visible += text.slice(0, tag.at)
        text = text.slice(tag.at + tag.length)
        inside = !inside
      }
    }
  }
}

/**
 * Live text for the text tool-call protocol. Prose is released as it arrives; anything that could
 * open a call frame (`<tool_call…`, `<invoke…`, a ```` ```tool… ```` fence), an echoed
 * `<tool_result>` or a terminal marker is held until it can no longer be one. Once a marker is
 * complete the rest of the response is held: the parser decides what of it is prose, and the loop
 * sends that part after parsing. A reply that opens with `{`, `[` or a fence may be a whole-reply
 * call envelope, so it is held entirely. Held text therefore never carries a call or its payload.
 */
const TAG_MARKERS = ['<tool_calls', '<tool_call', '<toolcall', '<tool-call', '<invoke', '<tool_result', '<|eom|>', '<eom>']
const FENCE = '```'
const FENCE_WORDS = ['tool', 'invoke']
const TOOL_FENCE = /^```[ \t]*(?:tool|invoke)/i

type Held = 'prose' | 'undecided' | 'marker'

function classifyTag (held: string): Held {
  const lower = held.toLowerCase()
  if (TAG_MARKERS.some((m) => lower.startsWith(m))) return 'marker'
  return TAG_MARKERS.some((m) => m.startsWith(lower)) ? 'undecided' : 'prose'
}

function classifyFence (held: string): Held {
  if (!FENCE.startsWith(held.slice(0, 3))) return 'prose'
  if (held.length < FENCE.length) return 'undecided'
  const line = held.split('\n', 1)[0] ?? ''
  if (TOOL_FENCE.test(line)) return 'marker'
  // The info word is still being written while it could become `tool` or `invoke`.
  const word = line.slice(FENCE.length).trimStart().toLowerCase()
  const lineEnded = held.length > line.length
  return !lineEnded && FENCE_WORDS.some((w) => w.startsWith(word)) ? 'undecided' : 'prose'
}

/** A filter whose output is only the text that may be shown now. */
export interface TextHoldBack {
  push (chunk: string): string
}

export function createFrameHoldBack (): TextHoldBack {
  let started = false
  let latched = false
  let held = ''
  // Whitespace waits for the text after it: before a frame it is not shown at all.
  const release = (out: string, rest: string): string => {
    const shown = out.trimEnd()
    held = out.slice(shown.length) + rest
    return shown
  }
  return {
    push (chunk) {
      if (latched) return ''
      let text = held + chunk
      held = ''
      if (!started) {
        const lead = text.trimStart()
        if (lead === '') {
          held = text
          return ''
        }
        started = true
        if (lead[0] === '{' || lead[0] === '[' || (lead[0] === '`' && FENCE.startsWith(lead.slice(0, 3)))) {
          latched = true
          return ''
        }
      }
      let out = ''
      for (;;) {
        const at = text.search(/[<`]/)
        if (at === -1) return release(out + text, '')
        out += text.slice(0, at)
        text = text.slice(at)
        const verdict = text[0] === '<' ? classifyTag(text) : classifyFence(text)
        if (verdict === 'marker') {
          latched = true
          return out.trimEnd()
        }
        if (verdict === 'undecided') return release(out, text)
        out += text[0] as string
        text = text.slice(1)
      }
    }
  }
}

/**
 * What of `display` (the parsed, visible text of a response) has not gone out yet, given the text
 * streamed live. Whitespace runs compare equal whatever their length (the parser trims and folds
 * blank lines); null when the streamed text is not a prefix of `display`.
 */
export function unsentRemainder (shown: string, display: string): string | null {
  let i = 0
  let j = 0
  const space = (c: string | undefined): boolean => c !== undefined && isBlankAt(c, 0)
  while (i < shown.length && space(shown[i])) i++
  for (;;) {
    if (i >= shown.length) return display.slice(j)
    if (space(shown[i])) {
      while (i < shown.length && space(shown[i])) i++
      if (i >= shown.length) return display.slice(j)
      if (!space(display[j])) return null
      while (j < display.length && space(display[j])) j++
      continue
    }
    if (shown[i] !== display[j]) return null
    i++
    j++
  }
}
