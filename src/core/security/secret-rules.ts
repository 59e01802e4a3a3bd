/**
 * The secret shapes the scrubber knows, one named rule each, written from the issuers' published
 * token formats (prefix, alphabet, length). `docs/decisions/` records why this table is ours
 * rather than a dependency on a maintained linter preset, and what it was checked against.
 *
 * A rule's pattern is regex source with two reserved named groups: `head`, text kept before the
 * secret, and `secret`, the span that gets masked. A rule may name a `quote` group and refer to it
 * with `\k<quote>`.
 *
 * Every match of a rule starts where its `anchor` (regex source) matches, and context before that
 * point is checked with lookbehinds: the scrubber finds all anchors with one scan and tries the
 * rules only there, instead of trying every rule at every position of the text. An anchor starts
 * with a literal or a small character class (never a lookbehind, which the engine would then
 * evaluate at every position).
 *
 * Tollgate's receipts (`tg-receipt-<ts>-<mac>`) stay verbatim without a rule of their own: they are
 * one run of `[A-Za-z0-9_-]`, and every shape that could start inside one needs a character
 * outside that set before it (the redactor also keeps a receipt that is an assignment's value).
 */

export interface SecretRule {
  id: string
  pattern: string
  anchor: string
  /** `prefix` (default): the secret's first four characters stay; `full`: nothing of it stays. */
  mask?: 'prefix' | 'full'
  /**
   * What makes the span a secret: its own shape (the default: an issuer's format, a PEM body, a
   * token after `Bearer`), or only the credential name it is assigned to (`password=<anything>`).
   * The approver's display masks a `name` span only when the value itself looks like a credential.
   */
  evidence?: 'shape' | 'name'
}

/** Case-insensitive letters without the `i` flag, which would also loosen the case-exact token shapes. */
export function caseless (pattern: string): string {
  return pattern.replace(/[a-z]/g, (letter) => `[${letter}${letter.toUpperCase()}]`)
}

/**
 * Names whose value is a credential when they end an identifier: `aws_secret_access_key`,
 * `DB_PASSWORD`, `x-api-key`, `client_secret`, `_authToken`. The separator must follow at once,
 * so `password_policy` or `tokenizer` never match.
 */
export const CREDENTIAL_NAME_WORDS = [
  'authorization', 'token', '(?:api|access|secret|private|user|signing|encryption|master|account)[_-]?key',
  'passw(?:or)?ds?', 'secrets?', 'bearer', 'credentials?', 'cookies?'
]

/** `name = value`, `name: value`, `"name": "value"`, `name => value`, `name := value`; never across a line break. */
const SEPARATOR = '(?:=>|:=|[:=])'
function assignedTo (names: string): string {
  return String.raw`${SEPARATOR}(?<=(?:${caseless(names)})["']?[ \t]*${SEPARATOR})[ \t]*`
}
const ASSIGNMENT = assignedTo(CREDENTIAL_NAME_WORDS.join('|'))
/** The separator of an assignment to a credential name: where the assignment rules match from. */
const ASSIGNMENT_ANCHOR = String.raw`[:=](?<=(?:${caseless(CREDENTIAL_NAME_WORDS.join('|'))})["']?[ \t]*[:=])`

/**
 * A credential's quoted value that has opened and not closed yet, at the end of the text: a stream
 * of text (text-stream.ts) holds it back until the quote closes or the line ends, since the
 * quoted-assignment rule can only find it whole.
 */
export const OPEN_QUOTED_CREDENTIAL = String.raw`${ASSIGNMENT_ANCHOR}[>=]?[ \t]*(?<quote>["'])(?:(?!\k<quote>)[^\\\r\n]|\\.)*\\?$`

/** The BEGIN line of a PEM private key (RSA, EC, OpenSSH, PKCS#8, encrypted, PGP key blocks). */
export const PRIVATE_KEY_BEGIN = '-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----'

/** Issuers' key formats that are secrets wherever they appear, with no name beside them. */
const KEY_SHAPES = [
  // OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-api03-).
  'sk-[A-Za-z0-9_-]{16,}',
  // Stripe secret and restricted keys, live and test, and webhook signing secrets.
  '[sr]k_(?:live|test)_[A-Za-z0-9]{10,}', 'whsec_[A-Za-z0-9+/=]{16,}',
  // Google API keys.
  'AIza[0-9A-Za-z_-]{35}',
  // GitHub classic, OAuth, user-to-server, server-to-server and refresh tokens; fine-grained PATs.
  'gh[pousr]_[A-Za-z0-9]{20,}', 'github_pat_[A-Za-z0-9_]{20,}',
  // Slack bot, user, workspace, refresh and configuration tokens; app-level tokens.
  'xox[abeoprs]-[A-Za-z0-9-]{10,}', 'xapp-[A-Za-z0-9-]{10,}',
  // AWS access key ids: long-term, temporary (STS) and the other IAM unique-id prefixes.
  '(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])',
  // npm; GitLab personal, deploy, runner, trigger, feed, mail, OAuth-app, SCIM, CI-job, agent and feature-flag tokens.
  'npm_[A-Za-z0-9]{36}', 'gl(?:pat|dt|rt|ft|soat|ffct|imt|oas|cbt|agent)-[A-Za-z0-9_-]{20,}', 'glptt-[0-9a-f]{40}',
  // SendGrid, Hugging Face, Grafana (cloud and service-account), Groq, xAI, Replicate.
  'SG\\.[A-Za-z0-9_-]{16,}\\.[A-Za-z0-9_-]{16,}', 'hf_[A-Za-z]{34}', 'glc_[A-Za-z0-9+/]{32,}={0,3}', 'glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}',
  'gsk_[A-Za-z0-9]{52}', 'xai-[A-Za-z0-9]{80}', 'r8_[A-Za-z0-9]{37}',
  // Shopify, Sentry, HashiCorp Vault, age.
  'shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}', 'sntry[su]_[A-Za-z0-9+/=_-]{40,}', 'hv[sb]\\.[A-Za-z0-9_-]{90,}',
  'AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}'
]
/**
 * The key shapes' prefixes, grouped by first character. The anchor scan's speed depends on how
 * many different characters an anchor can start with: each new one costs every scan of ordinary
 * text (a `d` for DigitalOcean, Databricks, Doppler and Docker tokens: 8 %), and a few more make
 * V8 stop skipping ahead, which doubles it (docs/decisions/0203). A format whose prefix would bring
 * a new first character is left to the assignment rules (it usually comes with its name).
 */
const KEY_SHAPE_ANCHOR = 'A(?:Iza|KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|PKA|ROA|SCA|3T|GE-SECRET-KEY-1)|[sr]k_|s(?:k-|hp|ntry)|' +
  'g(?:h[pousr]_|ithub_pat_|l(?:pat|dt|rt|ft|soat|ffct|imt|oas|cbt|agent|ptt)-|lc_|lsa_|sk_)|x(?:ox|app-|ai-)|whsec_|npm_|SG\\.|' +
  'h(?:f_|v[sb]\\.)|r8_'

/**
 * An AWS secret access key: 40 characters of base64 standing alone, with a digit, an upper- and a
 * lower-case letter (a git SHA, 40 lower-case hex digits, is not one). Too common a shape to be a
 * secret by itself; the rules below want a name or a key id beside it.
 */
const AWS_SECRET_KEY = '[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])' +
  '(?<=[0-9][A-Za-z0-9/+]{0,39})(?<=[A-Z][A-Za-z0-9/+]{0,39})(?<=[a-z][A-Za-z0-9/+]{0,39})'
/** In the spellings credentials files, environments and SDKs use; a caseless anchor would slow every scan. */
const AWS_SECRET_NAME = '(?:[sS]ecret[_-]?[aA]ccess[_-]?[kK]ey|SECRET[_-]?ACCESS[_-]?KEY)'

/** Order matters where two rules can match at the same position: the earlier one wins. */
export const SECRET_RULES: readonly SecretRule[] = Object.freeze([
  {
    // The body up to the END line (its last non-space character), or to the end of the text when
    // output was cut before it. Header lines of encrypted keys (`Proc-Type: …`) belong to the body.
    id: 'pem-private-key',
    pattern: String.raw`(?<head>${PRIVATE_KEY_BEGIN}\s*)(?<secret>[^\s-](?:(?:[^-]|-(?!----))*[^\s-])?)`,
    anchor: '-----BEGIN'
  },
  {
    id: 'slack-webhook',
    pattern: String.raw`(?<head>://(?<=\bhttps://)hooks\.slack\.com/(?:services|workflows|triggers)/)(?<secret>[A-Za-z0-9/_-]{8,})`,
    anchor: String.raw`://(?=hooks\.slack\.com/)`
  },
  {
    // The scheme is looked behind for, capped so long dotted runs cannot make the check quadratic.
    id: 'url-password',
    pattern: String.raw`(?<head>://(?<=\b[A-Za-z][A-Za-z0-9+.-]{0,31}://)[^\s:/?#@]*:)(?<secret>[^\s@/?#]+)(?=@)`,
    // Only URLs with a password: the anchor scan skips the many without one.
    anchor: String.raw`://(?=[^\s:/?#@]*:[^\s@/?#]*@)`,
    mask: 'full'
  },
  {
    // `aws_secret_access_key wJalr…`, `SecretAccessKey: "…"`: the name with any separator, a blank
    // included (`aws configure set aws_secret_access_key …`), which the assignment rules do not take.
    id: 'aws-secret-key-name',
    pattern: String.raw`(?<head>${AWS_SECRET_NAME}["']?[ \t]*(?:=>|:=|[:=])?[ \t]*["']?)(?<secret>${AWS_SECRET_KEY})`,
    anchor: '[sS]ecret(?=[_-]?[aA]ccess[_-]?[kK]ey)|SECRET(?=[_-]?ACCESS[_-]?KEY)'
  },
  {
    // `Basic` is too short to be taken for a value by the assignment rules below.
    id: 'basic-auth-header',
    pattern: String.raw`(?<head>${assignedTo('authorization')}["']?${caseless('basic')}[ \t]+)(?<secret>[A-Za-z0-9+/=]{8,})`,
    anchor: ASSIGNMENT_ANCHOR
  },
  {
    // A quoted value ends at its first unescaped closing quote and never spans lines.
    id: 'quoted-assignment',
    pattern: String.raw`(?<head>${ASSIGNMENT}(?<quote>["']))(?<secret>(?:(?!\k<quote>)[^\\\r\n]|\\.){8,})(?=\k<quote>)`,
    anchor: ASSIGNMENT_ANCHOR,
    evidence: 'name'
  },
  {
    id: 'assignment',
    pattern: String.raw`(?<head>${ASSIGNMENT})(?<secret>[^\s"'\x60,;&|<>(){}\[\]]{8,})`,
    anchor: ASSIGNMENT_ANCHOR,
    evidence: 'name'
  },
  {
    id: 'bearer-token',
    pattern: String.raw`(?<head>\b${caseless('bearer')}[ \t]+)(?<secret>[A-Za-z0-9._~+/=-]{8,})`,
    anchor: caseless('bearer')
  },
  {
    id: 'jwt',
    pattern: String.raw`(?<secret>\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)`,
    anchor: 'eyJ'
  },
  {
    id: 'key-shape',
    pattern: String.raw`(?<secret>(?<![A-Za-z0-9_-])(?:${KEY_SHAPES.join('|')}))`,
    anchor: KEY_SHAPE_ANCHOR
  }
])

/** Every anchor once, as one alternation. */
export const ANCHOR_SOURCE = [...new Set(SECRET_RULES.map((rule) => rule.anchor))].join('|')

/**
 * Shapes too common to be secrets on their own, masked only in a text that also holds their
 * context: a span of the rules above whose secret matches `context` (redact.ts looks for these
 * only once such a span was found, so ordinary text pays nothing for them).
 */
export interface ContextRule {
  id: string
  /** Regex source tried on the secret of each span the anchored rules found. */
  context: string
  /** Regex source searched over the whole text, with a `secret` group (the span is the secret's). */
  pattern: string
}

export const CONTEXT_RULES: readonly ContextRule[] = Object.freeze([
  {
    // A bare secret key is paired with its key id: long-term (AKIA) or temporary (ASIA).
    id: 'aws-secret-key-beside-key-id',
    context: '^(?:AKIA|ASIA)',
    // The character before is matched, not looked behind for: the search then skips the insides of words.
    pattern: String.raw`(?:^|[^A-Za-z0-9/+=])(?<secret>${AWS_SECRET_KEY})`
  }
])
