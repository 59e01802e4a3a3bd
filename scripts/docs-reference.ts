/**
 * `npm run docs:reference` (also part of `npm run openapi`): writes docs/reference/configuration.md
 * from schemas/config.ts and docs/reference/errors.md from the error catalogue, so neither can
 * drift from the code. test/unit/docs-reference.test.ts fails when a committed file is stale.
 */
import { writeFile } from 'node:fs/promises'
import {
  GatewayConfig, ProviderConfig, AgentConfig, RuntimeProfileConfig, RiskProfileConfig, McpServerConfig, RENAMED_CONFIG_KEYS
} from '../schemas/config.js'
import { ERRORS, TURN_FAILURE_CODES, RETRY_AFTER_S, type ErrorCode, type TurnFailureCode } from '../src/core/errors.js'

export const CONFIGURATION_PATH = new URL('../docs/reference/configuration.md', import.meta.url)
export const ERRORS_PATH = new URL('../docs/reference/errors.md', import.meta.url)

type Schema = Record<string, any>

/** The maps of named entries: the gateway schema keeps them open and validates each entry on its own. */
const ENTRY_SCHEMAS: Record<string, { schema: Schema, placeholder: string }> = {
  providers: { schema: ProviderConfig, placeholder: '<name>' },
  agents: { schema: AgentConfig, placeholder: '<name>' },
  runtime_profiles: { schema: RuntimeProfileConfig, placeholder: '<name>' },
  risk_profiles: { schema: RiskProfileConfig, placeholder: '<name>' },
  'mcp.servers': { schema: McpServerConfig, placeholder: '<server>' }
}

export interface ConfigKey {
  path: string
  type: string
  default: string
  range: string
  description: string | undefined
}

function code (text: string): string {
  return `\`${text.replaceAll('|', '\\|')}\``
}

function typeOf (s: Schema): string {
  if (s.anyOf !== undefined) {
    const options = s.anyOf as Schema[]
    if (options.every((o) => o.const !== undefined)) return 'enum'
    return options.map(typeOf).join(' or ')
  }
  if (s.const !== undefined) return 'constant'
  if (s.type === 'array') return `array of ${typeOf(s.items)}`
  if (s.type === 'object' && s.patternProperties !== undefined) return `map of ${typeOf(Object.values(s.patternProperties)[0] as Schema)}`
  if (s.type === 'object') return 'table'
  return String(s.type ?? 'any')
}

function rangeOf (s: Schema): string {
  const parts: string[] = []
  if (s.anyOf !== undefined) {
    const options = s.anyOf as Schema[]
    if (options.every((o) => o.const !== undefined)) parts.push(`one of ${options.map((o) => code(JSON.stringify(o.const))).join(', ')}`)
    else for (const o of options) { const r = rangeOf(o); if (r !== '') parts.push(r) }
  }
  if (s.type === 'array' && s.items !== undefined) {
    const inner = rangeOf(s.items)
    if (inner !== '') parts.push(`each ${inner}`)
  }
  if (s.minimum !== undefined && s.maximum !== undefined) parts.push(`${fmt(s.minimum)}–${fmt(s.maximum)}`)
  else if (s.minimum !== undefined) parts.push(`≥ ${fmt(s.minimum)}`)
  else if (s.maximum !== undefined) parts.push(`≤ ${fmt(s.maximum)}`)
  if (s.exclusiveMinimum !== undefined) parts.push(`> ${fmt(s.exclusiveMinimum)}`)
  if (s.minLength !== undefined && s.minLength > 1) parts.push(`at least ${s.minLength as number} characters`)
  if (s.maxLength !== undefined) parts.push(`at most ${s.maxLength as number} characters`)
  if (s.minLength === 1) parts.push('not empty')
  if (s.minItems !== undefined) parts.push(`at least ${s.minItems as number} items`)
  if (s.maxItems !== undefined) parts.push(`at most ${s.maxItems as number} items`)
  if (s.pattern !== undefined) parts.push(`matches ${code(s.pattern)}`)
  return parts.join('; ')
}

function fmt (n: number): string {
  return Number.isInteger(n) ? n.toLocaleString('en-US').replaceAll(',', '_') : String(n)
}

function defaultOf (s: Schema, required: boolean): string {
  if (s.default !== undefined) return code(JSON.stringify(s.default))
  return required ? 'required' : 'unset'
}

function walk (s: Schema, path: string, required: boolean, out: ConfigKey[]): void {
  const entry = ENTRY_SCHEMAS[path]
  if (entry !== undefined) {
    out.push({ path, type: `map of ${typeOf(entry.schema)}`, default: defaultOf(s, required), range: '', description: s.description ?? entry.schema.description })
    walk(entry.schema, `${path}.${entry.placeholder}`, true, out)
    return
  }
  const isTable = s.type === 'object' && s.properties !== undefined
  if (path !== '') {
    out.push({
      path,
      type: typeOf(s),
      default: isTable ? '' : defaultOf(s, required),
      range: isTable ? '' : rangeOf(s),
      description: s.description
    })
  }
  if (isTable) {
    const req = new Set<string>(s.required ?? [])
    for (const [key, child] of Object.entries(s.properties as Record<string, Schema>)) {
      walk(child, path === '' ? key : `${path}.${key}`, req.has(key) && child.default === undefined, out)
    }
  } else if (s.type === 'array' && s.items?.type === 'object' && s.items.properties !== undefined) {
    const req = new Set<string>(s.items.required ?? [])
    for (const [key, child] of Object.entries(s.items.properties as Record<string, Schema>)) {
      walk(child, `${path}[].${key}`, req.has(key) && child.default === undefined, out)
    }
  }
}

/** Every configuration key, in schema order, with the named-entry maps expanded. */
export function configKeys (): ConfigKey[] {
  const out: ConfigKey[] = []
  walk(GatewayConfig, '', true, out)
  return out
}

function cell (text: string): string {
  return text.replaceAll('\n', ' ').replaceAll('|', '\\|')
}

export function renderConfigurationReference (): string {
  const keys = configKeys()
  // A table's keys carry the meaning; every other key must say what it does.
  const missing = keys.filter((k) => k.type !== 'table' && (k.description === undefined || k.description === ''))
  if (missing.length > 0) throw new Error(`configuration keys without a description in schemas/config.ts: ${missing.map((k) => k.path).join(', ')}`)
  const lines = [
    '<!-- Generated by `npm run docs:reference` from schemas/config.ts. Do not edit: change the schema and regenerate. -->',
    '# Configuration reference',
    '',
    'Tollgate reads one TOML or JSON file named by `TOLLGATE_CONFIG` (none: the embedded defaults — the demo',
    'provider, a loopback bind, `auth.mode = "none"`). Every key has a default but a few inside named entries. Layers, later ones winning: the',
    'embedded defaults, the file, the environment (`TOLLGATE_HOST` → `server.host`, `TOLLGATE_PORT` or `PORT` →',
    '`server.port`, `TOLLGATE_LOG_LEVEL` → `log.level`, `TOLLGATE_WORKSPACE` → `workspace.dir`,',
    '`TOLLGATE_SQLITE_PATH` → `store.sqlite.path`, `TOLLGATE_PUBLIC_URL` → `server.public_url`, `TOLLGATE_AUTH_MODE` → `auth.mode`),',
    'then what an embedder passes to `loadConfig`.',
    '',
    '`<name>` stands for an entry of a map you name yourself (`[providers.openai]`, `[agents.coder]`); each',
    'entry is checked against the keys listed under it. `[]` marks the items of an array of tables',
    '(`receipts.keys[].id`). A walk-through with an annotated example file:',
    '[guides/configuration.md](../guides/configuration.md).',
    ''
  ]
  let section = ''
  for (const key of keys) {
    const top = key.path.split('.')[0] ?? key.path
    const topIsLeaf = !keys.some((k) => k.path.startsWith(`${top}.`))
    const heading = topIsLeaf ? 'Top level' : top
    if (heading !== section) {
      if (section !== '') lines.push('')
      section = heading
      lines.push(`## ${heading === 'Top level' ? heading : code(heading)}`, '', '| key | type | default | allowed | description |', '|---|---|---|---|---|')
    }
    // A table is a row of its own only when it says something its keys do not.
    if (key.type === 'table' && (key.description === undefined || key.path === top)) continue
    lines.push(`| ${code(key.path)} | ${cell(key.type)} | ${key.default} | ${cell(key.range)} | ${cell(key.description ?? '')} |`)
  }
  lines.push('', '## Renamed keys', '',
    'Still accepted under the old name: the value is used for the new key and the gateway logs a deprecation warning at start.',
    'Both names in one configuration are an error.', '', '| old name (deprecated) | new name |', '|---|---|')
  const named = (path: string): string => code(path.replaceAll('*', '<name>'))
  for (const rename of RENAMED_CONFIG_KEYS) lines.push(`| ${named(rename.old)} | ${named(rename.new)} |`)
  return lines.join('\n') + '\n'
}

/**
 * When each catalogue code is given, beyond its message. A Record over the code type, so a new
 * code does not compile until it is described here.
 */
const ERROR_WHEN: Record<ErrorCode, string> = {
  INVALID_REQUEST: 'a body, query or path parameter does not match the route\'s schema (a malformed cursor, a path parameter over 128 characters, a malformed URL)',
  INVALID_FRAME: 'a WebSocket frame is not a JSON object or does not match its frame schema',
  INVALID_JSON: 'a body or WebSocket frame is not valid JSON',
  UNKNOWN_FRAME_TYPE: 'a WebSocket frame\'s `type` is not one the gateway knows',
  UNKNOWN_AGENT: 'a turn names an agent the configuration does not define',
  UNKNOWN_TOOL: 'a turn\'s `tools.allow` names a tool the agent does not have (or `shell` where the sandbox does not work)',
  INVALID_DECISION: 'an approval answer is `edit` without a `replacement`, or not one of yes / no / always / edit',
  BUDGET_EXCEEDED: 'a new turn of a tenant whose daily budget is spent (`budgets.tenant_daily_usd`), or a turn request whose `budget_usd` is above the configured cap',
  CLIENT_TOOL_CONFLICT: 'a turn\'s `client_tools` names a tool the gateway already has, or one name twice',
  TOOL_CALL_NOT_WAITING: 'a client tool result (`POST /v1/turns/{id}/tool-results`, WS `tool.result`) names a call that is not waiting for one',
  STEERING_CLOSED: 'a steering message (`POST /v1/turns/{id}/messages`, WS `turn.steer`) names a turn that has ended or is ending',
  STEERING_QUEUE_FULL: 'a steering message would exceed the messages already waiting for the turn\'s next model call (`turns.max_steering_messages`)',
  INVALID_CRON: 'a schedule\'s `cron` is not an expression croner can read (5 fields, 6 with seconds, 7 with a year, or a nickname such as `@daily`), or one that never fires after now',
  INVALID_TIME_ZONE: 'a schedule\'s `timezone` is not an IANA time zone name the runtime knows',
  SCHEDULE_NOT_FOUND: 'no schedule with this id for this principal (another principal\'s schedule answers the same)',
  TOO_MANY_SCHEDULES: 'creating a schedule when the principal has `schedules.max_per_principal` already',
  CONNECTION_NOT_FOUND: 'a turn names an `owner_connection` that is not a live socket of the same principal',
  SUBPROTOCOL_REQUIRED: 'a WebSocket upgrade does not offer the `tollgate.v1` subprotocol',
  UNAUTHENTICATED: 'no token, or an `Authorization` header that is not `Bearer` (401 with `WWW-Authenticate`)',
  TOKEN_INVALID: 'the token fails a check (signature, `alg`, `iss`, `aud`, `nbf`, a missing claim, size); `detail` names it',
  TOKEN_EXPIRED: 'the token is past `exp` (plus the clock tolerance); on a socket: an `error` frame, then close 1008',
  FORBIDDEN: 'a missing scope (`error="insufficient_scope"`), or a turn started in another principal\'s session',
  AGENT_FORBIDDEN: 'the agent\'s `access` list does not admit the caller\'s tenant or scopes',
  ORIGIN_NOT_ALLOWED: 'a browser WebSocket upgrade from an origin that is not allowed (`ws.allowed_origins`, `server.public_url`)',
  NOT_FOUND: 'any path or method the gateway does not serve',
  TURN_NOT_FOUND: 'no turn with this id for this principal (another principal\'s turn answers the same)',
  SESSION_NOT_FOUND: 'no session with this id for this principal',
  APPROVAL_NOT_FOUND: 'no approval request with this id for this principal',
  DELIVERY_NOT_FOUND: 'no webhook delivery with this id in the caller\'s tenant (another tenant\'s answers the same)',
  REQUEST_TIMEOUT: 'a request did not arrive within `server.request_timeout_ms`',
  TURN_NOT_RUNNING: 'reserved: not sent by this version (cancelling a finished turn answers its status, as cancel is idempotent)',
  APPROVAL_ALREADY_RESOLVED: 'an approval answer after another answer won',
  APPROVAL_EXPIRED: 'an approval answer after the request timed out (its call was denied)',
  APPROVAL_CANCELLED: 'an approval answer after the request\'s turn was cancelled',
  DELIVERY_NOT_FAILED: 'a retry of a webhook delivery that is pending, delivered or cancelled (only failed ones are retried)',
  SESSION_BUSY: 'a second turn on a session whose turn is still running',
  IDEMPOTENCY_CONFLICT: 'a repeated `idempotency_key` with a different body',
  REPLAY_GAP: 'events asked for (`after_seq`, `Last-Event-ID`, `subscribe`) are no longer retained: refetch the turn',
  PAYLOAD_TOO_LARGE: 'a body over `server.body_limit_bytes`, or an adapter message over 100,000 characters',
  UNSUPPORTED_MEDIA_TYPE: 'a body that is not `application/json`',
  HOST_NOT_ALLOWED: 'the `Host` header names a host the gateway does not serve (DNS-rebinding guard), before any route',
  UPGRADE_REQUIRED: 'a plain GET to `/v1/ws`',
  RATE_LIMITED: 'a socket sends frames faster than `ws.frame_rate` allows (one `error` frame per refused frame)',
  TOO_MANY_TURNS: 'the principal (`turns.max_active_turns_per_principal`) or the process (`turns.max_active_turns`) runs too many turns',
  TOO_MANY_SUBSCRIPTIONS: 'a socket holds `ws.max_subscriptions` subscriptions already',
  HEADERS_TOO_LARGE: 'request headers over Node\'s 16 KiB',
  INTERNAL: 'a bug; the log line with the same `x-request-id` has the cause',
  PROVIDER_ERROR: 'the model provider answered with an error status (429 and 5xx after the retries) or an error object',
  PROVIDER_UNAVAILABLE: 'the provider could not be reached after the retries, or its stream was cut after text was sent',
  PROVIDER_BAD_RESPONSE: 'the provider\'s answer could not be read (malformed JSON or stream, no choices, over `max_response_bytes`)',
  PROVIDER_TIMEOUT: 'the provider did not answer within `timeout_ms` / `total_timeout_ms`',
  SHUTTING_DOWN: 'a turn was started while the gateway is stopping',
  NOT_READY: 'the store or the Redis bus is unreachable; retry later',
  AUTH_UNAVAILABLE: 'the JWKS cannot be fetched, so tokens cannot be verified now (not 401: keep the token)'
}

/** What each terminal `turn.failed` code means. */
const TURN_FAILURE_WHEN: Record<TurnFailureCode, string> = {
  BUDGET_EXCEEDED: 'a model call would pass a budget (`budgets.turn_usd`, `session_usd`, `tenant_daily_usd` or the turn\'s `budget_usd`) with `on_exceeded = "fail"`, or a person answered no to a budget approval; the message names the budget, the spend and the limit',
  TOOL_LOOP_CANCELLED: 'reserved: not sent by this version (a `before_tool_call` hook that cancels a call gives that call a `cancelled` result; the turn goes on)',
  REPEATED_PROMPT_REQUIRED_CALL: 'the model asked again, in a later round of the turn, for a `shell` call needing approval with identical arguments (the repeated-prompt guard)',
  LOOP_DETECTED: 'loop detection: a repeating pattern went two past its threshold ([turn loop](turn-loop.md#loop-detection-thresholds))',
  IDENTICAL_OUTPUT_LOOP: 'four identical rounds of output after `loop_detection.identical_output_min_elapsed_ms`',
  MAX_ITERATIONS: '`max_tool_iterations` reached with `max_iteration_behavior = "error"`',
  MALFORMED_TOOL_PROTOCOL: 'reserved: not sent by this version (a malformed call gets an error result the model sees; the turn goes on)',
  EMPTY_COMPLETION: 'the model answered with neither text nor a tool call',
  PROVIDER_ERROR: 'as the catalogue code: the provider answered with an error',
  PROVIDER_UNAVAILABLE: 'as the catalogue code: the provider could not be reached, or its stream was cut after text',
  PROVIDER_BAD_RESPONSE: 'as the catalogue code: the provider\'s answer could not be read',
  PROVIDER_TIMEOUT: 'as the catalogue code: the provider did not answer in time',
  TURN_TIMEOUT: '`turns.turn_timeout_ms` passed since the turn started (counted across restarts)',
  INTERRUPTED: 'the process running the turn stopped and the turn had no checkpoint to continue from',
  INTERNAL: 'a bug in the loop; the gateway log has the cause'
}

export function renderErrorsReference (): string {
  const lines = [
    '<!-- Generated by `npm run docs:reference` from src/core/errors.ts. Do not edit: change the catalogue and regenerate. -->',
    '# Error reference',
    '',
    'Every error a client can see carries a stable `code`. Over HTTP it is problem JSON',
    '`{type, title, status, code, detail?}` with the status below; over the WebSocket an `error` frame',
    '`{type: "error", code, message, ref?}` that never closes the socket. A turn that fails after it',
    'started ends with the event `turn.failed {code, message}`, whose codes are listed second.',
    'Refusals before any route, the limits and who sees what: [http-api.md](http-api.md),',
    '[security.md](security.md).',
    '',
    '## Request and frame errors',
    '',
    '| code | HTTP | message | when |',
    '|---|---|---|---|'
  ]
  for (const [name, entry] of Object.entries(ERRORS) as Array<[ErrorCode, { status: number, message: string }]>) {
    const retry = RETRY_AFTER_S[name]
    const when = ERROR_WHEN[name] + (entry.status === 429 ? `; \`Retry-After: ${retry ?? 1}\`` : '')
    lines.push(`| ${code(name)} | ${entry.status} | ${cell(entry.message)} | ${cell(when)} |`)
  }
  lines.push('', '## Turn failure codes (`turn.failed`)', '', '| code | when |', '|---|---|')
  for (const name of TURN_FAILURE_CODES) lines.push(`| ${code(name)} | ${cell(TURN_FAILURE_WHEN[name])} |`)
  return lines.join('\n') + '\n'
}

export async function writeReferences (): Promise<void> {
  await writeFile(CONFIGURATION_PATH, renderConfigurationReference())
  await writeFile(ERRORS_PATH, renderErrorsReference())
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  await writeReferences()
  console.log('wrote docs/reference/configuration.md and docs/reference/errors.md')
}
