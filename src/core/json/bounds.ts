/**
 * Bounds on a parsed JSON value: how deeply it nests and about how long its text is. JSON.parse
 * accepts any depth, but everything that later walks the value recursively (JSON.stringify of a
 * checkpoint or an event, canonical JSON, scrubbing, structuredClone) runs out of stack a few
 * thousand levels down — a value past the bound must be refused before it gets there. The walk
 * itself keeps its own stack, so it never runs out.
 */

export interface JsonBounds {
  /** Nesting levels of objects and arrays; the outermost container is level 1. */
  maxDepth: number
  /** Characters of the value's JSON text, escapes not counted. */
  maxChars: number
}

/** Length of a scalar's JSON text (escapes aside). */
function scalarChars (value: unknown): number {
  if (typeof value === 'string') return value.length + 2
  if (typeof value === 'number' || typeof value === 'bigint') return String(value).length
  if (typeof value === 'boolean') return value ? 4 : 5
  return 4
}

/** Why `value` exceeds `bounds` ("nest deeper than …"), or null when it does not. Stops at the first bound crossed. */
export function exceededBound (value: unknown, bounds: JsonBounds): string | null {
  const stack: Array<{ value: unknown, depth: number }> = [{ value, depth: 0 }]
  let chars = 0
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { value: v, depth } = next
    if (typeof v !== 'object' || v === null) {
      chars += scalarChars(v)
    } else {
      if (depth + 1 > bounds.maxDepth) return `nest deeper than ${bounds.maxDepth} levels`
      // Brackets, and a comma between members.
      chars += 2
      if (Array.isArray(v)) {
        chars += Math.max(0, v.length - 1)
        for (const item of v) stack.push({ value: item, depth: depth + 1 })
      } else {
        const entries = Object.entries(v)
        chars += Math.max(0, entries.length - 1)
        for (const [key, item] of entries) {
          // "key":
          chars += key.length + 3
          stack.push({ value: item, depth: depth + 1 })
        }
      }
    }
    if (chars > bounds.maxChars) return `take more than ${bounds.maxChars} characters of JSON`
  }
  return null
}
