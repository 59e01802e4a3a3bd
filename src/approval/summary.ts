/**
 * What an operator reads before deciding on a call, and what an operator's replacement text may
 * become before the model sees it as a tool result.
 */
import { canonicalJson } from '../json/canonical.js'
import { isSecretKeyName } from '../security/redact.js'

const MAX_VALUE_CHARS = 80
const MAX_NON_OBJECT_CHARS = 120
const ELLIPSIS = '…'

export const MAX_REPLACEMENT_BYTES = 65536

// Unicode Cc minus \t \n \r: C0 controls, DEL and C1 controls (which include the 8-bit CSI).
const DISALLOWED_CONTROLS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/g

export function summarizeArgs (args: unknown): string {
  if (!isPlainRecord(args)) return truncateChars(canonicalJson(args), MAX_NON_OBJECT_CHARS)
  return orderedKeys(args)
    .filter((key) => args[key] !== undefined)
    .map((key) => `${key}: ${summarizeValue(key, args[key])}`)
    .join(', ')
}

/** `path` leads because it is what an operator checks first for file tools. */
function orderedKeys (args: Record<string, unknown>): string[] {
  const rest = Object.keys(args).filter((key) => key !== 'path').sort()
  return Object.hasOwn(args, 'path') ? ['path', ...rest] : rest
}

function summarizeValue (key: string, value: unknown): string {
  if (isSecretKeyName(key)) return '[redacted]'
  const text = typeof value === 'string' ? value : canonicalJson(value)
  return truncateChars(text, MAX_VALUE_CHARS)
}

function truncateChars (text: string, maxChars: number): string {
  const chars = Array.from(text)
  return chars.length <= maxChars ? text : chars.slice(0, maxChars).join('') + ELLIPSIS
}

function isPlainRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function sanitizeReplacement (text: string): string {
  const cleaned = text.replace(DISALLOWED_CONTROLS, '')
  if (Buffer.byteLength(cleaned, 'utf8') <= MAX_REPLACEMENT_BYTES) return cleaned
  let bytes = 0
  let end = 0
  for (const char of cleaned) {
    const width = Buffer.byteLength(char, 'utf8')
    if (bytes + width > MAX_REPLACEMENT_BYTES) break
    bytes += width
    end += char.length
  }
  return cleaned.slice(0, end)
}
