/**
 * Credential scrubbing for the rendering layer (events, logs, observer payloads). It never runs on
 * the data path: what the model sees and what receipts sign stay byte-exact, so a scrubber bug can
 * only hide text from a human, never change what a tool did.
 *
 * The rules are in `secret-rules.ts`. Matching is leftmost-first over all rules, as one global
 * alternation would be, but the alternation is tried only where an anchor occurs: one scan for
 * anchors costs about as much as serialising the text, where trying every rule at every position
 * costs several times that (`npm run bench:scrub`).
 */
import { ANCHOR_SOURCE, SECRET_RULES, type SecretRule } from './secret-rules.js'

const REDACTED_SUFFIX = '*[REDACTED]'
const FULL_MASK = '****'
const VISIBLE_PREFIX_CHARS = 4
const MAX_VALUE_DEPTH = 20

const SECRET_KEY_FRAGMENTS = [
  'secret', 'password', 'passwd', 'token', 'api_key', 'api-key', 'apikey', 'auth', 'bearer',
  'private_key', 'private-key', 'privatekey', 'credential', 'cookie'
]
/** Contained in every SECRET_KEY_FRAGMENTS entry; found in a lower-cased copy (a case-insensitive scan is slower). */
const KEY_FRAGMENT_HINT = /secret|passw|token|key|auth|bearer|credential|cookie/

// Solana Pay links carry `spl-token=<public mint address>`; redacting it breaks payment URLs.
const PUBLIC_TOKEN_KEYS = new Set(['spl-token', 'spl_token'])

const RECEIPT_PREFIXES = ['zc-receipt-', 'tg-receipt-']

const ANCHORS = new RegExp(ANCHOR_SOURCE, 'g')
/** Each rule on its own, matched only at a given position: small match objects, no shared groups. */
const AT_POSITION = SECRET_RULES.map((rule) => new RegExp(rule.pattern, 'y'))

export interface SecretSpan {
  rule: SecretRule
  /** The whole match; `secretStart`..`secretEnd` is the part to mask. */
  start: number
  end: number
  secretStart: number
  secretEnd: number
}

/** Every secret-rule match in `text`, left to right and non-overlapping. */
export function findSecretSpans (text: string): SecretSpan[] {
  const spans: SecretSpan[] = []
  let consumed = 0
  ANCHORS.lastIndex = 0
  for (let anchor = ANCHORS.exec(text); anchor !== null; anchor = ANCHORS.exec(text)) {
    const at = anchor.index
    if (at >= consumed) {
      const span = matchAt(text, at)
      if (span !== null) {
        spans.push(span)
        consumed = span.end
      }
    }
    // Anchors may overlap (`sk-----BEGIN`): the scan goes on at the next character, or after a
    // match, whose inside is covered by it.
    ANCHORS.lastIndex = Math.max(at + 1, consumed)
  }
  return spans
}

/** The first rule, in table order, that matches at `at`: what one alternation of all rules would find there. */
function matchAt (text: string, at: number): SecretSpan | null {
  for (let i = 0; i < SECRET_RULES.length; i++) {
    const pattern = AT_POSITION[i] as RegExp
    pattern.lastIndex = at
    const m = pattern.exec(text)
    if (m === null) continue
    const secret = m.groups?.secret ?? ''
    const secretStart = at + (m.groups?.head?.length ?? 0)
    return { rule: SECRET_RULES[i] as SecretRule, start: at, end: at + m[0].length, secretStart, secretEnd: secretStart + secret.length }
  }
  return null
}

/** False when neither scrubText nor scrubValue could change this text (or the JSON value it encodes). */
export function mayHoldSecret (text: string): boolean {
  ANCHORS.lastIndex = 0
  return ANCHORS.test(text) || KEY_FRAGMENT_HINT.test(text.toLowerCase())
}

/** Decides, for one secret span, whether it is masked; the approver's view masks only plain tokens. */
export type MaskPolicy = (secret: string) => boolean

const ALWAYS: MaskPolicy = () => true

export function scrubText (text: string, policy: MaskPolicy = ALWAYS): string {
  const spans = findSecretSpans(text)
  if (spans.length === 0) return text
  let out = ''
  let copied = 0
  for (const span of spans) {
    const secret = text.slice(span.secretStart, span.secretEnd)
    if (secret === '' || !policy(secret) || isPublicValue(span, text)) continue
    out += text.slice(copied, span.secretStart) + (span.rule.mask === 'full' ? FULL_MASK : mask(secret))
    copied = span.secretEnd
  }
  return copied === 0 ? text : out + text.slice(copied)
}

/** Receipts quoted as a value, and the public mint address a Solana Pay link names `spl-token`. */
function isPublicValue (span: SecretSpan, text: string): boolean {
  if (span.rule.id !== 'assignment' && span.rule.id !== 'quoted-assignment') return false
  if (RECEIPT_PREFIXES.some((prefix) => text.startsWith(prefix, span.secretStart))) return true
  return SPL_TOKEN_NAME.test(text.slice(Math.max(0, span.start - 16), span.start))
}

const SPL_TOKEN_NAME = /spl[-_]token["']?[ \t]*$/i

function mask (secret: string): string {
  return Array.from(secret).slice(0, VISIBLE_PREFIX_CHARS).join('') + REDACTED_SUFFIX
}

export function isSecretKeyName (key: string): boolean {
  const lowered = key.toLowerCase()
  if (PUBLIC_TOKEN_KEYS.has(lowered)) return false
  return SECRET_KEY_FRAGMENTS.some((fragment) => lowered.includes(fragment))
}

/**
 * Structured variant for JSON-shaped payloads. Walking the value (rather than scrubbing its
 * serialisation) keeps key names such as `access_token` intact while hiding their values.
 */
export function scrubValue (value: unknown): unknown {
  return scrubNode(value, 0, new Set())
}

function scrubNode (input: unknown, depth: number, ancestors: Set<object>): unknown {
  const value = jsonView(input)
  if (typeof value === 'string') return scrubText(value)
  if (typeof value !== 'object' || value === null) return value
  if (ancestors.has(value)) return '[Circular]'
  if (depth > MAX_VALUE_DEPTH) return '[Truncated]'
  ancestors.add(value)
  try {
    if (Array.isArray(value)) return value.map((item: unknown) => scrubNode(item, depth + 1, ancestors))
    const copy: Record<string, unknown> = {}
    for (const [key, child] of Object.entries(value)) {
      copy[key] = isSecretKeyName(key) && child !== null && child !== undefined
        ? '[REDACTED]'
        : scrubNode(child, depth + 1, ancestors)
    }
    return copy
  } finally {
    ancestors.delete(value)
  }
}

/** What JSON.stringify would render (Dates become strings), so the copy matches what gets shown. */
function jsonView (value: unknown): unknown {
  const toJson = typeof value === 'object' && value !== null ? (value as { toJSON?: unknown }).toJSON : undefined
  return typeof toJson === 'function' ? toJson.call(value) : value
}
