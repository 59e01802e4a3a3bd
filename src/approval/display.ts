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
 * - A credential is shown as a reference in its place: `‹` + what of it may be seen (an issuer
 *   prefix such as `ghp_`, or nothing) + `••••›` — `password=‹••••›; mysql -p"$password"`. Since
 *   `‹` in the text is always escaped, a call cannot forge one (`*[REDACTED]` is also a shell glob).
 * - A secret is masked only when the masked span is a plain token (letters, digits, `+/=._~-`):
 *   masking can then hide a value but never a command, a quote or a line of the call. And a value
 *   that is a secret only by the name it is assigned to (`password=…`, a `token` argument) is
 *   masked only when it looks like a credential itself (see CREDENTIAL_LIKE): a path, a host, an
 *   option or a word may be what the command acts on (`password=/srv/data; rm -rf "$password"`),
 *   so it is shown. Logs, the audit and other surfaces keep every such span masked.
 *
 * Its recipients are exactly the people entitled to answer the request (the turn's owner).
 */
import { canonicalJson } from '../core/json/canonical.js'
import {
  findSecretSpans, isSecretKeyName, rewriteSecrets, type SecretContext, type SecretRender
} from '../core/security/redact.js'

export interface ArgumentDisplay {
  name: string
  value: string
}

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u2039\u23CE]|(?! )\p{Zs}/gu
const LINE_BREAK_MARK = '⏎'
const PLAIN_TOKEN = /^[A-Za-z0-9+/=._~-]+$/
/**
 * A value that could be a generated or typed credential: one run of base64, base64url or hex
 * characters with a letter and a digit. No dot or `~`, nothing starting with `/` or `-`, no `//`:
 * whatever it names, it is no absolute path, parent folder, home, host name or option.
 */
const CREDENTIAL_LIKE = /^(?![-/])(?!.*\/\/)(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9+/=_-]+$/
const SHOWN_PREFIX_CHARS = 4

/** A credential's place in the display: what of it may be seen, then the dots. */
function reference (visible: string): string {
  return `‹${visible}••••›`
}

/** The reference of a masked span, or null to show it as it is. */
const approverReference: SecretRender = (secret, span) => {
  if (!PLAIN_TOKEN.test(secret)) return null
  if (span.rule.evidence === 'name') return CREDENTIAL_LIKE.test(secret) ? reference('') : null
  return reference(span.rule.mask === 'full' ? '' : Array.from(secret).slice(0, SHOWN_PREFIX_CHARS).join(''))
}

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
  const context: SecretContext = new Set()
  const once = renderArguments(args, context)
  // A context found in one argument (an AWS key id) makes a bare secret key in an earlier one a secret too.
  return context.size === 0 ? once : renderArguments(args, context)
}

function renderArguments (args: Record<string, unknown>, context: SecretContext): ArgumentDisplay[] {
  return orderedKeys(args)
    .filter((key) => args[key] !== undefined)
    .map((key) => {
      const value = args[key]
      return {
        name: visibleText(key, false),
        value: typeof value === 'string' ? displayString(key, value, context, false) : displayJson(key, value, context, 0)
      }
    })
}

const MAX_DEPTH = 20

/** One string for the approver; `json`: as a string literal's inside, within a JSON value. */
function displayString (key: string, text: string, context: SecretContext, json: boolean): string {
  if (isSecretKeyName(key) && PLAIN_TOKEN.test(text) && CREDENTIAL_LIKE.test(text)) return reference('')
  const plain = json
    ? (part: string) => visibleText(JSON.stringify(part).slice(1, -1), true)
    : (part: string) => visibleText(part, true)
  return rewriteSecrets(text, findSecretSpans(text, context), approverReference, { plain })
}

/**
 * A structured value as canonical JSON (keys sorted, as `canonicalJson`) with each string shown
 * as displayString shows it. Arguments are parsed model output: plain JSON values.
 */
function displayJson (key: string, value: unknown, context: SecretContext, depth: number): string {
  if (typeof value === 'string') return `"${displayString(key, value, context, true)}"`
  if (typeof value !== 'object' || value === null || depth > MAX_DEPTH) return visibleText(canonicalJson(value), true)
  if (Array.isArray(value)) return `[${value.map((item: unknown) => displayJson(key, item, context, depth + 1)).join(',')}]`
  const record = value as Record<string, unknown>
  const members = Object.keys(record).sort().filter((k) => record[k] !== undefined)
    .map((k) => `${visibleText(JSON.stringify(k), true)}:${displayJson(k, record[k], context, depth + 1)}`)
  return `{${members.join(',')}}`
}
