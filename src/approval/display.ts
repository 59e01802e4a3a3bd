/**
 * What the person deciding on a call reads (`approval.requested.display`): every argument, whole,
 * exactly as the tool will receive it, so nothing that will run can hide from them.
 *
 * - Nothing is cut: a long value is shown whole (clients scroll or wrap it).
 * - Characters that are invisible or move text around are shown as `‹U+XXXX›` escapes: controls,
 *   bidi embeddings, overrides, isolates and marks, zero-width and other default-ignorable
 *   characters, line and paragraph separators, spaces other than U+0020, unassigned and private-use
 *   code points, lone surrogates. A line break is shown as `⏎` followed by the break itself.
 *   `‹` and `⏎` in the text are escaped too, so an escape always means what it says.
 * - A secret is masked only when the masked span is a plain token (letters, digits, `+/=._~-`):
 *   masking can then hide a value but never a command, a quote or a line of the call. Anything
 *   else secret-shaped is shown as it is; logs, the audit and other surfaces keep it masked.
 *
 * Its recipients are exactly the people entitled to answer the request (the turn's owner).
 */
import { canonicalJson } from '../core/json/canonical.js'
import { isSecretKeyName, scrubText, type MaskPolicy } from '../core/security/redact.js'

export interface ArgumentDisplay {
  name: string
  value: string
}

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u2039\u23CE]|(?! )\p{Zs}/gu
const LINE_BREAK_MARK = '⏎'
const PLAIN_TOKEN = /^[A-Za-z0-9+/=._~-]+$/
const SECRET_VALUE = '[REDACTED]'

/** Masks a secret span only when it is a plain token. */
export const approverMask: MaskPolicy = (secret) => PLAIN_TOKEN.test(secret)

/** `lineBreaks`: keep each line break after its `⏎` (multi-line displays); else `⏎` alone (one-line summaries). */
export function visibleText (text: string, lineBreaks: boolean): string {
  return text.replace(INVISIBLE, (ch) => {
    if (ch === '\n') return lineBreaks ? `${LINE_BREAK_MARK}\n` : LINE_BREAK_MARK
    const code = ch.codePointAt(0) ?? 0
    return `‹U+${code.toString(16).toUpperCase().padStart(4, '0')}›`
  })
}

/** `path` leads because it is what an operator checks first for file tools; the rest are sorted. */
export function orderedKeys (args: Record<string, unknown>): string[] {
  const rest = Object.keys(args).filter((key) => key !== 'path').sort()
  return Object.hasOwn(args, 'path') ? ['path', ...rest] : rest
}

export function displayArguments (args: Record<string, unknown>): ArgumentDisplay[] {
  return orderedKeys(args)
    .filter((key) => args[key] !== undefined)
    .map((key) => ({ name: visibleText(key, false), value: visibleText(displayValue(key, args[key]), true) }))
}

function displayValue (key: string, value: unknown): string {
  const shown = approverView(key, value, 0)
  return typeof shown === 'string' ? shown : canonicalJson(shown)
}

const MAX_DEPTH = 20

/** Strings with the approver's masking; a plain-token value of a credential-named key is hidden whole. */
function approverView (key: string, value: unknown, depth: number): unknown {
  if (typeof value === 'string') {
    return isSecretKeyName(key) && approverMask(value) ? SECRET_VALUE : scrubText(value, approverMask)
  }
  if (typeof value !== 'object' || value === null || depth > MAX_DEPTH) return value
  if (Array.isArray(value)) return value.map((item) => approverView(key, item, depth + 1))
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, approverView(k, v, depth + 1)]))
}
