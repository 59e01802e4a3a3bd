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
import { ANCHOR_SOURCE, CONTEXT_RULES, SECRET_RULES, type SecretRule } from './secret-rules.js'

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
const CONTEXTS = CONTEXT_RULES.map((rule) => ({
  rule: { id: rule.id, pattern: rule.pattern, anchor: '' } satisfies SecretRule,
  context: new RegExp(rule.context),
  pattern: new RegExp(rule.pattern, 'g')
}))

export interface SecretSpan {
  rule: SecretRule
  /** The whole match; `secretStart`..`secretEnd` is the part to mask. */
  start: number
  end: number
  secretStart: number
  secretEnd: number
}

/**
 * The contexts (CONTEXT_RULES ids) found so far in a text made of parts: the strings of one JSON
 * value, or the deltas of one stream. A context seen in one part applies to the others.
 */
export type SecretContext = Set<string>

/**
 * Every secret-rule match in `text`, left to right and non-overlapping. `context`, when given,
 * brings in the contexts of the other parts of the same text and takes the ones found here.
 */
export function findSecretSpans (text: string, context?: SecretContext): SecretSpan[] {
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
  return withContextSpans(text, spans, context)
}

/** Adds the matches of every context rule whose context is in this text (or in `context`). */
function withContextSpans (text: string, spans: SecretSpan[], context: SecretContext | undefined): SecretSpan[] {
  let found = spans
  for (const c of CONTEXTS) {
    const inText = spans.some((s) => c.context.test(text.slice(s.secretStart, s.secretEnd)))
    if (inText) context?.add(c.rule.id)
    if (!inText && context?.has(c.rule.id) !== true) continue
    const extra: SecretSpan[] = []
    for (const m of text.matchAll(c.pattern)) {
      const secret = m.groups?.secret ?? ''
      const start = m.index + m[0].length - secret.length
      const end = start + secret.length
      if (!found.some((s) => s.start < end && start < s.end)) extra.push({ rule: c.rule, start, end, secretStart: start, secretEnd: end })
    }
    if (extra.length > 0) found = [...found, ...extra].sort((a, b) => a.start - b.start)
  }
  return found
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

/**
 * What a masked secret becomes; null leaves it as it is (the approver's display masks only some).
 * `span` is the secret's span in the text being rewritten.
 */
export type SecretRender = (secret: string, span: SecretSpan) => string | null

/** The scrubber's own form: the first four characters and `*[REDACTED]`, or `****` for `full` rules. */
export const scrubbedForm: SecretRender = (secret, span) => span.rule.mask === 'full' ? FULL_MASK : mask(secret)

export function scrubText (text: string, context?: SecretContext): string {
  const spans = findSecretSpans(text, context)
  return spans.length === 0 ? text : rewriteSecrets(text, spans, scrubbedForm)
}

export interface RewriteOptions {
  /** Rewrite from here on: the text before it is context (already shown), not output. */
  from?: number
  /** What the text between secrets becomes (the approver's display escapes invisible characters). */
  plain?: (text: string) => string
}

const AS_IS = (text: string): string => text

/**
 * `text` with each of its secret `spans` (findSecretSpans of it) rendered by `render`. A span that
 * starts before `from` has its part after `from` masked whole. Receipts and the public values
 * named like credentials (spl-token) are never secrets.
 */
export function rewriteSecrets (text: string, spans: readonly SecretSpan[], render: SecretRender, options: RewriteOptions = {}): string {
  const { from = 0, plain = AS_IS } = options
  let out = ''
  let copied = from
  for (const span of spans) {
    if (span.secretEnd <= from) continue
    const secret = text.slice(span.secretStart, span.secretEnd)
    if (secret === '' || isPublicValue(span, text)) continue
    const shown = render(secret, span)
    if (shown === null) continue
    const start = Math.max(span.secretStart, from)
    // A secret begun before `from` was not shown: none of it is, even a kept prefix.
    out += plain(text.slice(copied, start)) + (start === span.secretStart ? shown : FULL_MASK)
    copied = span.secretEnd
  }
  return out + plain(text.slice(copied))
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
  const context: SecretContext = new Set()
  const once = scrubNode(value, 0, new Set(), context)
  // A context found in one string (an AWS key id) applies to the strings before it too.
  return context.size === 0 ? once : scrubNode(value, 0, new Set(), context)
}

function scrubNode (input: unknown, depth: number, ancestors: Set<object>, context: SecretContext): unknown {
  const value = jsonView(input)
  if (typeof value === 'string') return scrubText(value, context)
  if (typeof value !== 'object' || value === null) return value
  if (ancestors.has(value)) return '[Circular]'
  if (depth > MAX_VALUE_DEPTH) return '[Truncated]'
  ancestors.add(value)
  try {
    if (Array.isArray(value)) return value.map((item: unknown) => scrubNode(item, depth + 1, ancestors, context))
    const copy: Record<string, unknown> = {}
    for (const [key, child] of Object.entries(value)) {
      copy[key] = isSecretKeyName(key) && child !== null && child !== undefined
        ? '[REDACTED]'
        : scrubNode(child, depth + 1, ancestors, context)
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
