/**
 * Credential scrubbing for the rendering layer (events, logs, observer payloads). It never runs on
 * the data path: what the model sees and what receipts sign stay byte-exact, so a scrubber bug can
 * only hide text from a human, never change what a tool did.
 */

const REDACTED_SUFFIX = '*[REDACTED]'
const VISIBLE_PREFIX_CHARS = 4
const MAX_VALUE_DEPTH = 20

const SECRET_KEY_FRAGMENTS = [
  'secret', 'password', 'passwd', 'token', 'api_key', 'api-key', 'apikey', 'auth', 'bearer',
  'private_key', 'private-key', 'privatekey', 'credential', 'cookie'
]

// Solana Pay links carry `spl-token=<public mint address>`; redacting it breaks payment URLs.
const PUBLIC_TOKEN_KEYS = new Set(['spl-token', 'spl_token'])

const RECEIPT_PREFIXES = ['zc-receipt-', 'tg-receipt-']

const KV_KEY_WORDS = [
  'authorization', 'token', 'api[_-]?key', 'passw(?:or)?ds?', 'secrets?', 'user[_-]?key', 'bearer',
  'credentials?', 'set[_-]cookie', 'cookies?', 'private[_-]?key'
]

// Well-known vendor key prefixes (OpenAI, GitHub, Slack, AWS): secrets even with no key name beside them.
const API_KEY_SHAPES = [
  'sk-[A-Za-z0-9_-]{16,}', 'gh[pousr]_[A-Za-z0-9]{20,}', 'github_pat_[A-Za-z0-9_]{20,}', 'xox[abprs]-[A-Za-z0-9-]{10,}',
  'AKIA[0-9A-Z]{16}(?![0-9A-Za-z])'
]

/** Case-insensitive letters without the `i` flag, which would also loosen the case-exact token shapes. */
function caseless (pattern: string): string {
  return pattern.replace(/[a-z]/g, (letter) => `[${letter}${letter.toUpperCase()}]`)
}

// One alternation scanned left to right: a receipt token is consumed whole before any secret shape
// can match inside it, which is what keeps receipts verbatim.
const SCRUB_PATTERN = new RegExp([
  String.raw`(?<receipt>\b(?:zc|tg)-receipt-[A-Za-z0-9_-]*)`,
  // The scheme length is capped so long dotted runs (hostnames, versions) cannot make the scan quadratic.
  String.raw`(?<urlHead>\b[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s:/?#@]*:)(?<urlPassword>[^\s@/?#]+)(?=@)`,
  // `Authorization: Basic <base64>` would otherwise slip through: `Basic` is too short to be a value.
  String.raw`(?<basicHead>${caseless('authorization')}["']?\s*[:=]\s*["']?${caseless('basic')}\s+)(?<basicCredential>[A-Za-z0-9+/=]{8,})`,
  String.raw`(?<kvKey>${caseless(KV_KEY_WORDS.join('|'))})(?<kvKeyQuote>["']?)(?<kvSep>\s*[:=]\s*)` +
    // A quoted value ends at its first unescaped closing quote and never spans lines.
    String.raw`(?:(?<kvQuote>["'])(?<kvQuoted>(?:(?!\k<kvQuote>)[^\\\r\n]|\\.){8,})\k<kvQuote>` +
    String.raw`|(?<kvBare>[A-Za-z0-9_\-./+=]{8,}))`,
  String.raw`(?<bearerWord>\b${caseless('bearer')}\s+)(?<bearerToken>[A-Za-z0-9._~+/=-]{8,})`,
  String.raw`(?<jwt>\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)`,
  String.raw`(?<apiKey>(?<![A-Za-z0-9_-])(?:${API_KEY_SHAPES.join('|')}))`
].join('|'), 'g')

interface ScrubGroups {
  receipt?: string
  urlHead?: string
  basicHead?: string
  basicCredential?: string
  kvKey?: string
  kvKeyQuote?: string
  kvSep?: string
  kvQuote?: string
  kvQuoted?: string
  kvBare?: string
  bearerWord?: string
  bearerToken?: string
  jwt?: string
  apiKey?: string
}

export function scrubText (text: string): string {
  return text.replace(SCRUB_PATTERN, (...args: unknown[]) => {
    const match = args[0] as string
    const offset = args[args.length - 3] as number
    const groups = args[args.length - 1] as ScrubGroups
    return replaceMatch(match, groups, text.slice(Math.max(0, offset - 4), offset))
  })
}

function replaceMatch (match: string, groups: ScrubGroups, before: string): string {
  if (groups.receipt !== undefined) return match
  if (groups.urlHead !== undefined) return `${groups.urlHead}****`
  if (groups.basicHead !== undefined) return groups.basicHead + mask(groups.basicCredential ?? '')
  if (groups.kvKey !== undefined) return replaceKeyValue(match, groups, before)
  if (groups.bearerWord !== undefined) return groups.bearerWord + mask(groups.bearerToken ?? '')
  return mask(groups.jwt ?? groups.apiKey ?? match)
}

function replaceKeyValue (match: string, groups: ScrubGroups, before: string): string {
  const key = groups.kvKey ?? ''
  const value = groups.kvQuoted ?? groups.kvBare ?? ''
  if (key.toLowerCase() === 'token' && /spl[-_]$/i.test(before)) return match
  if (RECEIPT_PREFIXES.some((prefix) => value.startsWith(prefix))) return match
  const quote = groups.kvQuote ?? ''
  return `${key}${groups.kvKeyQuote ?? ''}${groups.kvSep ?? ''}${quote}${mask(value)}${quote}`
}

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
