/**
 * JSON scanning for model text. Model output is untrusted and can be huge, so every scan here is a
 * single pass (or bounded by a budget): a reply full of unclosed braces must not stall the turn.
 */

export type JsonParse = { ok: true, value: unknown } | { ok: false, error: string }

interface Span { start: number, end: number }

/** How many characters, relative to the text's length, JSON.parse may see while hunting for values. */
const PARSE_BUDGET_FACTOR = 4
const PARSE_BUDGET_FLOOR = 4096
const MAX_ERROR_CHARS = 160

export function tryParseJson (text: string): JsonParse {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    return { ok: false, error: message.length > MAX_ERROR_CHARS ? `${message.slice(0, MAX_ERROR_CHARS)}…` : message }
  }
}

export function isPlainObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * End (exclusive) of the object or array opening at `start`, honouring JSON strings, or -1 when it
 * never balances. `text[start]` must be `{` or `[`.
 */
export function findBalancedEnd (text: string, start: number): number {
  const expected: string[] = []
  let inString = false
  for (let i = start; i < text.length; i++) {
    const ch = text[i]
    if (inString) {
      if (ch === '\\') i++
      else if (ch === '"') inString = false
      continue
    }
    if (ch === '"') inString = true
    else if (ch === '{') expected.push('}')
    else if (ch === '[') expected.push(']')
    else if (ch === '}' || ch === ']') {
      if (expected.pop() !== ch) return -1
      if (expected.length === 0) return i + 1
    }
  }
  return -1
}

/**
 * Every balanced bracket span in one pass, ordered by start. Quotes only count inside brackets:
 * prose between values ("it's", "quoted") must not flip the scanner into string mode.
 */
function balancedSpans (text: string): Span[] {
  const spans: Span[] = []
  const open: Array<{ pos: number, close: string }> = []
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (inString) {
      if (ch === '\\') i++
      else if (ch === '"') inString = false
      continue
    }
    if (ch === '{' || ch === '[') {
      open.push({ pos: i, close: ch === '{' ? '}' : ']' })
      continue
    }
    if (open.length === 0) continue
    if (ch === '"') {
      inString = true
    } else if (ch === '}' || ch === ']') {
      const top = open.pop()
      if (top === undefined) continue
      if (top.close !== ch) {
        // Nothing still open can become valid JSON across a mismatched bracket.
        open.length = 0
        continue
      }
      spans.push({ start: top.pos, end: i + 1 })
    }
  }
  return spans.sort((a, b) => a.start - b.start)
}

/**
 * Every JSON object or array in `text`, in order, ignoring the noise between them. A span that fails
 * to parse is searched for smaller values inside it.
 */
export function extractJsonValues (text: string): unknown[] {
  const values: unknown[] = []
  let budget = PARSE_BUDGET_FACTOR * text.length + PARSE_BUDGET_FLOOR
  let cursor = 0
  for (const span of balancedSpans(text)) {
    if (span.start < cursor) continue
    const length = span.end - span.start
    if (length > budget) continue
    budget -= length
    const parsed = tryParseJson(text.slice(span.start, span.end))
    if (parsed.ok) {
      values.push(parsed.value)
      cursor = span.end
    }
  }
  return values
}
