/**
 * Live-text hygiene for streamed model output: reasoning inside <think>…</think> (or
 * <thinking>…</thinking>) never reaches the visible text, even when a tag is split across
 * chunks; it is handed back apart, for `reasoning.delta`.
 */
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
