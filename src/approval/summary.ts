/**
 * The one-line record of a call's arguments kept in the approval audit (and sent, as `summary`,
 * with the request), and what an operator's replacement text may become before the model sees
 * it as a tool result. The summary is made from scrubbed arguments: it is for the record and may
 * hide secret-shaped spans; the person deciding reads `display.ts`'s exact form instead.
 */
import { canonicalJson } from '../core/json/canonical.js'
import { isSecretKeyName } from '../core/security/redact.js'
import { orderedKeys, visibleText } from './display.js'

export const MAX_REPLACEMENT_BYTES = 65536

// Unicode Cc minus \t \n \r: C0 controls, DEL and C1 controls (which include the 8-bit CSI).
// eslint-disable-next-line no-control-regex -- control characters are what this pattern finds
const DISALLOWED_CONTROLS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/g

/** Never cut: a tail an operator cannot see is where a deception would go. Invisible characters are escaped. */
export function summarizeArgs (args: unknown): string {
  if (!isPlainRecord(args)) return visibleText(canonicalJson(args), false)
  return orderedKeys(args)
    .filter((key) => args[key] !== undefined)
    .map((key) => `${visibleText(key, false)}: ${summarizeValue(key, args[key])}`)
    .join(', ')
}

function summarizeValue (key: string, value: unknown): string {
  if (isSecretKeyName(key)) return '[redacted]'
  return visibleText(typeof value === 'string' ? value : canonicalJson(value), false)
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
