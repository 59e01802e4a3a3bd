/**
 * A corpus of real-shaped secrets and of near-misses, for the scrubber. Every secret is generated
 * at run time: tokens from random bytes in the documented shape of their issuer (prefix, alphabet,
 * length), private keys by Node's key generator (once per process: RSA generation is slow). No
 * real key is ever in the repository, and none of these is used for anything.
 */
import { generateKeyPairSync, randomBytes, randomInt } from 'node:crypto'

export interface CorpusSecret {
  name: string
  /** The text as it appears in a tool's output. */
  text: string
  /** The secret part: no run of `LEAK_WINDOW` of its characters may survive scrubbing. */
  secret: string
}

export interface NearMiss {
  name: string
  /** Looks like a secret to a careless pattern but is not one: it must come through unchanged. */
  text: string
}

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
const LOWER = 'abcdefghijklmnopqrstuvwxyz'
const DIGITS = '0123456789'
const ALNUM = UPPER + LOWER + DIGITS
const HEX = '0123456789abcdef'
const B64 = ALNUM + '+/'
const B64URL = ALNUM + '-_'

/** The scrubber keeps the first four characters of a masked value; longer runs count as a leak. */
export const LEAK_WINDOW = 8

function pick (alphabet: string, length: number): string {
  let out = ''
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)]
  return out
}

function b64url (value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

function pemSecret (text: string): { text: string, secret: string } {
  return { text: text.trim(), secret: text.trim().split('\n').slice(1, -1).join('\n') }
}

/** Real keys, generated for this run: RSA (PKCS#1), EC (SEC1) and Ed25519 (PKCS#8). */
function generatedKeys (): { rsa: string, ec: string, pkcs8: string } {
  const publicKeyEncoding = { type: 'spki', format: 'pem' } as const
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs1', format: 'pem' }, publicKeyEncoding })
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256', privateKeyEncoding: { type: 'sec1', format: 'pem' }, publicKeyEncoding })
  const ed = generateKeyPairSync('ed25519', { privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding })
  return { rsa: rsa.privateKey, ec: ec.privateKey, pkcs8: ed.privateKey }
}

/** OpenSSH's own key format (`openssh-key-v1` magic, then the key blob), which Node cannot write. */
function opensshKey (): string {
  const blob = Buffer.concat([Buffer.from('openssh-key-v1\0'), randomBytes(380)]).toString('base64')
  return `-----BEGIN OPENSSH PRIVATE KEY-----\n${(blob.match(/.{1,70}/g) ?? []).join('\n')}\n-----END OPENSSH PRIVATE KEY-----`
}

let keys: ReturnType<typeof generatedKeys> | null = null

/** 40 characters of base64 with a digit and both cases, as AWS issues them (a draw without one is rare; redraw it). */
function awsSecretKey (): string {
  for (;;) {
    const key = pick(B64, 40)
    if (/[0-9]/.test(key) && /[A-Z]/.test(key) && /[a-z]/.test(key)) return key
  }
}

function jwt (): string {
  const header = b64url({ alg: 'HS256', typ: 'JWT' })
  const payload = b64url({ sub: `user-${pick(DIGITS, 6)}`, tenant: 'acme', exp: 1_900_000_000 })
  return `${header}.${payload}.${pick(B64URL, 43)}`
}

/** At least 30 secrets of the kinds issue 11 lists, each generated fresh. */
export function secretCorpus (): CorpusSecret[] {
  const s = (name: string, text: string, secret: string): CorpusSecret => ({ name, text, secret })
  const awsId = `AKIA${pick(UPPER + DIGITS, 16)}`
  const awsTemporaryId = `ASIA${pick(UPPER + DIGITS, 16)}`
  const awsSecret1 = pick(B64, 40)
  const awsSecret2 = pick(B64, 40)
  const awsSecret3 = pick(B64, 40)
  const stripeLive = pick(ALNUM, 99)
  const stripeRestricted = pick(ALNUM, 24)
  const stripeTest = pick(ALNUM, 24)
  const stripeWebhook = pick(ALNUM, 32)
  const google1 = pick(B64URL, 35)
  const google2 = pick(B64URL, 35)
  const ghp = pick(ALNUM, 36)
  const gho = pick(ALNUM, 36)
  const ghs = pick(ALNUM, 36)
  const ghPat = `${pick(ALNUM, 22)}_${pick(ALNUM, 59)}`
  const slackBot = `${pick(DIGITS, 12)}-${pick(DIGITS, 13)}-${pick(ALNUM, 24)}`
  const slackUser = `${pick(DIGITS, 12)}-${pick(DIGITS, 12)}-${pick(DIGITS, 13)}-${pick(HEX, 32)}`
  const slackApp = `1-A${pick(UPPER + DIGITS, 10)}-${pick(DIGITS, 13)}-${pick(HEX, 64)}`
  const hookPath = `T${pick(UPPER + DIGITS, 8)}/B${pick(UPPER + DIGITS, 10)}/${pick(ALNUM, 24)}`
  const hookPath2 = `T${pick(UPPER + DIGITS, 10)}/B${pick(UPPER + DIGITS, 11)}/${pick(ALNUM, 24)}`
  keys ??= generatedKeys()
  const rsa = pemSecret(keys.rsa)
  const openssh = pemSecret(opensshKey())
  const pkcs8 = pemSecret(keys.pkcs8)
  const ec = pemSecret(keys.ec)
  const token = jwt()
  const urlPassword = pick(ALNUM, 14)
  const pgPassword = pick(ALNUM + '_-', 18)
  const openaiProject = `proj-${pick(B64URL, 74)}T3BlbkFJ${pick(B64URL, 74)}`
  const openaiLegacy = pick(ALNUM, 48)
  const anthropic = `${pick(B64URL, 93)}AA`
  const genericPassword = pick(ALNUM + '!%^*', 16)
  const yamlSecret = pick(ALNUM + '-_', 24)
  const jsonPassword = pick(ALNUM, 20)
  const bearer = pick(B64URL + '.', 40)
  const basic = Buffer.from(`admin:${pick(ALNUM, 16)}`).toString('base64')
  const apiKey = pick(HEX, 32)
  const dbPassword = pick(ALNUM, 20)
  const clientSecret = pick(ALNUM + '~._-', 34)
  const npm = pick(ALNUM, 36)
  const gitlab = pick(ALNUM + '_-', 20)
  const awsPairedId = `AKIA${pick(UPPER + DIGITS, 16)}`
  const awsBare = awsSecretKey()
  const awsCli = awsSecretKey()
  const gitlabRunner = pick(ALNUM + '_-', 20)
  const groq = pick(ALNUM, 52)
  const xai = pick(ALNUM, 80)
  const replicate = pick(ALNUM, 37)
  const shopify = pick(HEX, 32)
  const vault = pick(B64URL, 91)
  const age = pick('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L', 58)
  const grafana = `${pick(ALNUM, 32)}_${pick(HEX, 8)}`
  const sentry = pick(HEX, 64)
  const azure = `${pick(B64, 86)}==`
  return [
    s('AWS access key id', `aws_access_key_id = ${awsId}`, awsId.slice(4)),
    s('AWS temporary access key id', `"AccessKeyId": "${awsTemporaryId}"`, awsTemporaryId.slice(4)),
    s('AWS secret key, credentials-file form', `aws_secret_access_key = ${awsSecret1}`, awsSecret1),
    s('AWS secret key, environment form', `export AWS_SECRET_ACCESS_KEY=${awsSecret2}`, awsSecret2),
    s('AWS secret key, STS JSON form', `"SecretAccessKey": "${awsSecret3}",`, awsSecret3),
    s('Stripe live secret key', `stripe.api_key: sk_live_${stripeLive}`, stripeLive),
    s('Stripe restricted key', `using rk_live_${stripeRestricted} for reports`, stripeRestricted),
    s('Stripe test secret key', `STRIPE=sk_test_${stripeTest}`, stripeTest),
    s('Stripe webhook signing secret', `signing with whsec_${stripeWebhook}`, stripeWebhook),
    s('Google API key', `https://maps.googleapis.com/maps/api/geocode/json?address=x&key=AIza${google1}`, google1),
    s('Google API key, bare', `GOOGLE_MAPS AIza${google2} loaded`, google2),
    s('GitHub classic token', `remote: ghp_${ghp}`, ghp),
    s('GitHub OAuth token', `oauth gho_${gho}`, gho),
    s('GitHub app installation token', `GH=ghs_${ghs}`, ghs),
    s('GitHub fine-grained token', `github_pat_${ghPat}`, ghPat),
    s('Slack bot token', `SLACK_BOT=xoxb-${slackBot}`, slackBot),
    s('Slack user token', `slack user xoxp-${slackUser}`, slackUser),
    s('Slack app-level token', `app token xapp-${slackApp}`, slackApp),
    s('Slack incoming webhook', `posting to https://hooks.slack.com/services/${hookPath}`, hookPath),
    s('Slack webhook in JSON', `{"webhook_url":"https://hooks.slack.com/services/${hookPath2}"}`, hookPath2),
    s('PEM RSA private key', rsa.text, rsa.secret),
    s('PEM OpenSSH private key', openssh.text, openssh.secret),
    s('PEM PKCS#8 private key', pkcs8.text, pkcs8.secret),
    s('PEM EC private key', ec.text, ec.secret),
    s('JWT', `session=${token}; Path=/`, token.slice(4)),
    s('basic-auth URL', `cloning https://deploy:${urlPassword}@git.example.com/app.git`, urlPassword),
    s('database URL with password', `DATABASE_URL=postgres://app:${pgPassword}@db.internal:5432/app`, pgPassword),
    s('OpenAI project key', `OPENAI_API_KEY=sk-${openaiProject}`, openaiProject),
    s('OpenAI legacy key', `openai.api_key = "sk-${openaiLegacy}"`, openaiLegacy),
    s('Anthropic key', `x-api-key: sk-ant-api03-${anthropic}`, anthropic),
    s('generic password assignment', `password=${genericPassword}`, genericPassword),
    s('generic YAML secret', `  secret: ${yamlSecret}`, yamlSecret),
    s('JSON password field', `{"user": "admin", "password": "${jsonPassword}"}`, jsonPassword),
    s('bearer header', `Authorization: Bearer ${bearer}`, bearer),
    s('basic header', `Authorization: Basic ${basic}`, basic),
    s('generic API key assignment', `API_KEY=${apiKey}`, apiKey),
    s('environment password', `DB_PASSWORD='${dbPassword}'`, dbPassword),
    s('OAuth client secret', `client_secret: ${clientSecret}`, clientSecret),
    s('npm token', `//registry.npmjs.org/:_authToken=npm_${npm}`, npm),
    s('GitLab token', `PRIVATE-TOKEN: glpat-${gitlab}`, gitlab),
    s('AWS secret key, bare beside its key id', `Access key ID,Secret access key\n${awsPairedId},${awsBare}`, awsBare),
    s('AWS secret key, CLI form', `aws configure set aws_secret_access_key ${awsCli}`, awsCli),
    s('GitLab runner token', `runner glrt-${gitlabRunner}`, gitlabRunner),
    s('Groq key', `groq gsk_${groq}`, groq),
    s('xAI key', `xai xai-${xai}`, xai),
    s('Replicate token', `replicate r8_${replicate}`, replicate),
    s('Shopify access token', `shopify shpat_${shopify}`, shopify),
    s('Vault token', `vault hvs.${vault}`, vault),
    s('age secret key', `# key\nAGE-SECRET-KEY-1${age}`, age),
    s('Grafana service-account token', `grafana glsa_${grafana}`, grafana),
    s('Sentry user token', `sentry sntryu_${sentry}`, sentry),
    s('Azure storage account key', `DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=${azure};EndpointSuffix=core.windows.net`, azure)
  ]
}

/** At least 30 strings that share a shape or a word with a secret but are not secrets. */
export const NEAR_MISSES: readonly NearMiss[] = Object.freeze([
  { name: 'git commit SHA', text: 'commit 3f786850e387550fdab836ed7e6dc881de23001b' },
  { name: 'short SHA in a log line', text: 'HEAD is now at 9fceb02 fix the build' },
  { name: 'UUID', text: 'request id 123e4567-e89b-12d3-a456-426614174000' },
  { name: 'base64 of ordinary text', text: 'payload: SGVsbG8sIHdvcmxkISBUaGlzIGlzIGp1c3QgdGV4dC4=' },
  { name: 'password policy setting', text: 'password_policy=strict' },
  { name: 'password length setting', text: 'min_password_length: 12' },
  { name: 'tokenizer name', text: 'tokenizer=cl100k_base' },
  { name: 'token count', text: 'max_tokens: 4096, prompt_tokens=1234' },
  { name: 'URL without credentials', text: 'see https://example.com:8443/docs/index.html?page=2#top' },
  { name: 'URL with a user but no password', text: 'git clone ssh://git@github.com/acme/app.git' },
  { name: 'e-mail address', text: 'contact: alice.smith@example.com' },
  { name: 'sha256 image digest', text: 'image@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
  { name: 'AWS example prefix too short', text: 'the key starts with AKIA followed by 16 characters' },
  { name: 'risk words with sk-', text: 'a risk-free, task-based, desk-side plan' },
  { name: 'word containing sk_live_', text: 'task_live_updates_enabled=true' },
  { name: 'Stripe publishable key', text: 'pk_live_51Hxyz publishes nothing secret' },
  { name: 'GitHub prefix alone', text: 'tokens look like ghp_ plus 36 characters' },
  { name: 'Slack prefix alone', text: 'bot tokens begin with xoxb- and user tokens with xoxp-' },
  { name: 'Slack hooks host without a path', text: 'webhooks live under https://hooks.slack.com/' },
  {
    name: 'PEM public key',
    text: '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE9n8F3qkpR2N0yN1lG3nQ0s1m8Yb0\n-----END PUBLIC KEY-----'
  },
  { name: 'PEM certificate header', text: '-----BEGIN CERTIFICATE-----' },
  { name: 'private key mentioned in prose', text: 'never commit a private key to the repository' },
  { name: 'empty password assignment', text: 'password=' },
  { name: 'secret file name', text: 'cp secret_santa_list.txt backup/' },
  { name: 'passwd file path', text: 'grep root /etc/passwd' },
  { name: 'bearer in prose', text: 'Bearer tokens are sent in the Authorization header.' },
  { name: 'JWT prefix without segments', text: 'a JWT header starts with eyJ' },
  { name: 'semantic version', text: 'upgraded to 1.24.3-beta.4+build.5678' },
  { name: 'ISO timestamp', text: 'finished at 2024-03-27T12:34:56.789Z' },
  { name: 'IPv6 address', text: 'listening on [2001:db8::8a2e:370:7334]:8080' },
  { name: 'Google word', text: 'AIza is how Google API keys begin' },
  { name: 'npm config variable', text: 'npm_config_cache=/tmp/npm' },
  { name: 'hex colour and numbers', text: 'color #ff8800, 1234567890, 0xdeadbeef' },
  { name: 'authority setting', text: 'authority=https://login.example.com/common' },
  { name: 'lorem ipsum', text: 'Lorem ipsum dolor sit amet, consectetur adipiscing elit.' },
  { name: 'GitLab and Groq prefixes alone', text: 'runner tokens begin with glrt- and Groq keys with gsk_' },
  { name: 'AWS secret key setting without a value', text: 'aws_secret_access_key is read from ~/.aws/credentials' },
  { name: 'git SHA beside an AWS key id in the same text', text: 'commit 0beec7b5ea3f0fdbc95d0dd47f3c5bc275da8a33 in the AKIA rotation notes' },
  { name: 'base64 longer than a secret key', text: 'blob: YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXpBQkNERUZHSElKS0xN' }
])

/** One text holding every corpus secret and every near-miss, one per line (PEM blocks span lines). */
export function corpusText (secrets: readonly CorpusSecret[]): string {
  return [...secrets.map((c) => c.text), ...NEAR_MISSES.map((n) => n.text)].join('\n')
}

/** The corpus secrets some run of `LEAK_WINDOW` characters of which appears in `text`. */
export function leakedSecrets (secrets: readonly CorpusSecret[], text: string): string[] {
  return secrets.filter((c) => leaks(c.secret, text)).map((c) => c.name)
}

function leaks (secret: string, text: string): boolean {
  // PEM bodies span lines; JSON escapes their line breaks, so compare line by line too.
  for (const part of secret.split('\n')) {
    for (let i = 0; i + LEAK_WINDOW <= part.length; i++) {
      if (text.includes(part.slice(i, i + LEAK_WINDOW))) return true
    }
  }
  return false
}
