/**
 * Removing protocol noise from model text: reasoning blocks, terminal markers, echoed tool results.
 */

/** Longer spellings first, so a suffix check matches the most specific marker. */
const TERMINAL_MARKERS = ['<|eom|>', '<eom>'] as const

type Unclosed = 'keep' | 'drop'

/** An `open … close` block kind. Compiled once: this runs on every model response. */
interface Block { open: RegExp, close: RegExp }

function block (name: string): Block {
  return { open: new RegExp(`<${name}(?:\\s[^<>]*)?>`, 'gi'), close: new RegExp(`</${name}\\s*>`, 'gi') }
}

const THINK = block('think')
const THINKING = block('thinking')
const TOOL_RESULT = block('tool_result')

/**
 * Removes every `open … close` block. An unclosed block either stays as it is or takes the rest of
 * the text with it. One forward pass: after a missing close there is nothing left to search.
 * Every block opens with `<`: text without one (most model text) is returned as it is.
 */
function removeBlocks (text: string, { open, close }: Block, unclosed: Unclosed): string {
  if (!text.includes('<')) return text
  let out = ''
  let pos = 0
  for (;;) {
    open.lastIndex = pos
    const opened = open.exec(text)
    if (opened === null) break
    close.lastIndex = opened.index + opened[0].length
    const closed = close.exec(text)
    if (closed === null) return out + (unclosed === 'drop' ? text.slice(pos, opened.index) : text.slice(pos))
    out += text.slice(pos, opened.index)
    pos = closed.index + closed[0].length
  }
  return out + text.slice(pos)
}

/** Drops `<think>…</think>` blocks; an unclosed `<think>` means everything after it is reasoning. */
export function stripThinkBlocks (text: string): string {
  return removeBlocks(text, THINK, 'drop')
}

/** Drops trailing `<|eom|>` / `<eom>` markers (stacked, with whitespace after them); inline markers stay. */
export function stripTerminalMarkers (text: string): string {
  let result = text
  for (;;) {
    const trimmed = result.trimEnd()
    const marker = TERMINAL_MARKERS.find((candidate) => trimmed.endsWith(candidate))
    if (marker === undefined) return result
    result = trimmed.slice(0, trimmed.length - marker.length)
  }
}

/**
 * Removes `<tool_result…>…</tool_result>`, `<thinking>…</thinking>`, `<think>…</think>` blocks and a
 * leading `[Tool results]` line, for user-visible text. History keeps the raw text.
 */
export function stripToolResultBlocks (text: string): string {
  let result = removeBlocks(text, TOOL_RESULT, 'keep')
  result = removeBlocks(result, THINKING, 'drop')
  result = stripThinkBlocks(result)
  result = result.trimStart().replace(/^\[Tool results\][ \t]*(?:\r?\n)?/, '')
  return result.trim().replace(/\n{3,}/g, '\n\n')
}
