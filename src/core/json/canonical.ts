/**
 * Canonical JSON: the single serialisation behind dedup signatures, HMAC receipts and loop
 * detection. Two values that mean the same JSON must produce the same text, whatever order
 * their keys were inserted in, so object keys are sorted at every level and nothing else varies.
 */
import { hash } from 'node:crypto'

export function canonicalJson (value: unknown): string {
  // A bare `undefined` has no JSON form; `null` keeps the signature total instead of throwing.
  return encode(value, new Set()) ?? 'null'
}

/** SHA-256 hex; the one-shot `crypto.hash` (Node ≥ 20.12) is a third of a Hash object's cost per call. */
export function digest (text: string): string {
  return hash('sha256', text, 'hex')
}

/** Returns undefined for values JSON.stringify would omit (undefined, functions, symbols). */
function encode (value: unknown, ancestors: Set<object>): string | undefined {
  const plain = withToJson(value)
  switch (typeof plain) {
    case 'string':
      return JSON.stringify(plain)
    case 'number':
      return Number.isFinite(plain) ? JSON.stringify(plain) : 'null'
    case 'boolean':
      return plain ? 'true' : 'false'
    // Tool args never carry bigints from JSON.parse; digits are what serde would print for a wide integer.
    case 'bigint':
      return plain.toString()
    case 'object':
      if (plain === null) return 'null'
      return encodeContainer(plain, ancestors)
    default:
      return undefined
  }
}

function encodeContainer (value: object, ancestors: Set<object>): string {
  if (ancestors.has(value)) throw new TypeError('canonicalJson: value contains a circular reference')
  ancestors.add(value)
  try {
    if (Array.isArray(value)) {
      return '[' + value.map((item: unknown) => encode(item, ancestors) ?? 'null').join(',') + ']'
    }
    const record = value as Record<string, unknown>
    const members: string[] = []
    for (const key of Object.keys(record).sort()) {
      const encoded = encode(record[key], ancestors)
      if (encoded !== undefined) members.push(JSON.stringify(key) + ':' + encoded)
    }
    return '{' + members.join(',') + '}'
  } finally {
    ancestors.delete(value)
  }
}

function withToJson (value: unknown): unknown {
  if (typeof value === 'object' && value !== null && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return (value as { toJSON: () => unknown }).toJSON()
  }
  return value
}
