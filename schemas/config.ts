import { Type, type Static } from '@sinclair/typebox'

/**
 * Gateway configuration. Every key has a default, so an empty file (or none) gives the embedded
 * set-up: demo provider, loopback bind, auth mode `none`. Map entries (providers, agents,
 * profiles) are validated one by one against their entry schema so their defaults apply too.
 */

const Names = Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { default: [] })

export const ServerConfig = Type.Object({
  host: Type.String({ default: '127.0.0.1' }),
  port: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  body_limit_bytes: Type.Integer({ minimum: 1024, default: 1_048_576 }),
  request_timeout_ms: Type.Integer({ minimum: 0, default: 0, description: '0: no timeout (SSE and ?wait=true hold requests open)' }),
  shutdown_timeout_ms: Type.Integer({ minimum: 0, default: 10_000 }),
  public_url: Type.Optional(Type.String())
}, { additionalProperties: false, default: {} })

export const LogConfig = Type.Object({
  level: Type.Union([
    Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'),
    Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')
  ], { default: 'info' })
}, { additionalProperties: false, default: {} })

export const JWT_ALGORITHMS = [
  'HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'
] as const
export type JwtAlgorithm = typeof JWT_ALGORITHMS[number]

const OneOrMany = Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })])

export const AuthConfig = Type.Object({
  mode: Type.Union([Type.Literal('none'), Type.Literal('jwt')], { default: 'none', description: 'none: one local principal, loopback bind only' }),
  secret: Type.Optional(Type.String({ minLength: 32, description: 'HMAC shared secret (development); prefer secret_env' })),
  secret_env: Type.Optional(Type.String({ minLength: 1, description: 'Name of the environment variable holding the HMAC secret' })),
  jwks_url: Type.Optional(Type.String({ minLength: 1, description: 'http(s) URL of the issuer\'s JSON Web Key Set (asymmetric keys)' })),
  algorithms: Type.Array(Type.Union(JWT_ALGORITHMS.map((a) => Type.Literal(a))), {
    default: [], description: 'Allowlist; empty: HS256 with a secret, RS256/ES256/EdDSA with a JWKS'
  }),
  issuer: Type.Optional(OneOrMany),
  audience: Type.Optional(OneOrMany),
  clock_tolerance_s: Type.Integer({ minimum: 0, maximum: 300, default: 30 }),
  tenant_claim: Type.String({ minLength: 1, default: 'tenant' }),
  max_token_bytes: Type.Integer({ minimum: 256, maximum: 65_536, default: 8192 }),
  jwks_timeout_ms: Type.Integer({ minimum: 100, default: 5000 }),
  jwks_cooldown_ms: Type.Integer({ minimum: 0, default: 30_000, description: 'Minimum pause between refetches triggered by an unknown kid' }),
  jwks_cache_max_age_ms: Type.Integer({ minimum: 1000, default: 600_000 }),
  allow_query_token: Type.Boolean({ default: true, description: 'Accept ?access_token= on /v1/ws (least preferred: URLs end up in logs and history)' })
}, { additionalProperties: false, default: {} })

export const WsConfig = Type.Object({
  heartbeat_ms: Type.Integer({ minimum: 0, default: 30_000, description: '0 disables pings' }),
  max_payload_bytes: Type.Integer({ minimum: 1024, default: 1_048_576 }),
  max_subscriptions: Type.Integer({ minimum: 1, default: 256 }),
  max_buffered_bytes: Type.Integer({ minimum: 1024, default: 4_194_304, description: 'Slow-consumer bound: a socket with more unsent bytes is closed with 1008' }),
  allowed_origins: Type.Array(Type.String(), { default: [], description: 'Browser origins allowed to open /v1/ws besides the gateway\'s own' }),
  frame_rate: Type.Object({
    per_second: Type.Number({ exclusiveMinimum: 0, default: 50, description: 'Sustained client frames per second per socket' }),
    burst: Type.Integer({ minimum: 1, default: 100 }),
    max_rejected: Type.Integer({ minimum: 1, default: 100, description: 'Refused frames (forgiven at per_second) before the socket is closed with 1008' })
  }, { additionalProperties: false, default: {} })
}, { additionalProperties: false, default: {} })

export const UiConfig = Type.Object({
  enabled: Type.Boolean({ default: true, description: 'Serve the browser client at / (files from public/)' })
}, { additionalProperties: false, default: {} })

export const TurnsConfig = Type.Object({
  approval_timeout_ms: Type.Integer({ minimum: 1, default: 120_000 }),
  disconnect_grace_ms: Type.Integer({ minimum: 0, default: 0 }),
  turn_timeout_ms: Type.Integer({ minimum: 0, default: 600_000, description: '0: no limit' }),
  retention_ms: Type.Integer({ minimum: 0, default: 3_600_000, description: 'How long finished turns stay queryable in memory' }),
  max_events_per_turn: Type.Integer({ minimum: 16, default: 10_000, description: 'Replay buffer per turn; older events answer REPLAY_GAP' }),
  max_active_turns: Type.Integer({ minimum: 1, default: 256 }),
  max_active_turns_per_principal: Type.Integer({ minimum: 1, default: 16 }),
  max_event_output_chars: Type.Integer({ minimum: 256, default: 16_384, description: 'Bound on tool output carried in streamed events' })
}, { additionalProperties: false, default: {} })

export const WorkspaceConfig = Type.Object({
  dir: Type.String({ default: './workspace' })
}, { additionalProperties: false, default: {} })

export const ToolsConfig = Type.Object({
  shell: Type.Object({
    timeout_ms: Type.Integer({ minimum: 100, default: 60_000 }),
    max_output_bytes: Type.Integer({ minimum: 1024, default: 262_144 }),
    block_high_risk_commands: Type.Boolean({ default: true }),
    require_approval_for_medium_risk: Type.Boolean({ default: true }),
    env_allowlist: Type.Array(Type.String(), { default: ['PATH', 'LANG', 'LC_ALL', 'TZ'] })
  }, { additionalProperties: false, default: {} }),
  files: Type.Object({
    max_read_bytes: Type.Integer({ minimum: 1, default: 1_048_576 }),
    max_write_bytes: Type.Integer({ minimum: 1, default: 1_048_576 })
  }, { additionalProperties: false, default: {} }),
  http: Type.Object({
    allow_hosts: Type.Array(Type.String(), { default: [] }),
    allow_private: Type.Boolean({ default: false }),
    timeout_ms: Type.Integer({ minimum: 100, default: 30_000 }),
    max_response_bytes: Type.Integer({ minimum: 1, default: 524_288 }),
    max_redirects: Type.Integer({ minimum: 0, default: 5 })
  }, { additionalProperties: false, default: {} })
}, { additionalProperties: false, default: {} })

export const ProviderConfig = Type.Object({
  kind: Type.Union([Type.Literal('demo'), Type.Literal('openai')], { description: 'demo: embedded scripted provider, NOT an LLM' }),
  base_url: Type.Optional(Type.String({ description: 'e.g. https://api.openai.com/v1' })),
  api_key_env: Type.Optional(Type.String({ description: 'Name of the environment variable holding the API key' })),
  model: Type.String({ default: 'gpt-4o-mini' }),
  native_tools: Type.Boolean({ default: true, description: 'false: tools go in the prompt (text protocol)' }),
  stream: Type.Boolean({ default: true }),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  timeout_ms: Type.Integer({ minimum: 100, default: 120_000 }),
  max_response_bytes: Type.Integer({ minimum: 1024, default: 8_388_608 }),
  headers: Type.Record(Type.String(), Type.String(), { default: {} }),
  step_delay_ms: Type.Integer({ minimum: 0, default: 0, description: 'demo only: pause between streamed pieces' })
}, { additionalProperties: false })
export type ProviderConfig = Static<typeof ProviderConfig>

export const AgentConfig = Type.Object({
  provider: Type.String({ default: 'demo' }),
  model: Type.Optional(Type.String()),
  system_prompt: Type.String({ default: 'You are Tollgate\'s assistant. Use the tools available to you when they help, then answer concisely.' }),
  tools: Type.Array(Type.String(), { default: ['shell', 'file_read', 'file_write', 'http_request'], description: 'Tool bundle admitted for this agent' }),
  runtime_profile: Type.String({ default: 'default' }),
  risk_profile: Type.String({ default: 'default' })
}, { additionalProperties: false })
export type AgentConfig = Static<typeof AgentConfig>

export const ToolReceiptsConfig = Type.Object({
  enabled: Type.Boolean({ default: false }),
  show_in_response: Type.Boolean({ default: false }),
  inject_system_prompt: Type.Boolean({ default: true })
}, { additionalProperties: false, default: {} })

export const RuntimeProfileConfig = Type.Object({
  max_tool_iterations: Type.Integer({ minimum: 0, default: 10, description: '0 means 10' }),
  parallel_tools: Type.Boolean({ default: false }),
  max_tool_result_chars: Type.Integer({ minimum: 0, default: 50_000, description: 'UTF-8 bytes kept in history; 0 disables' }),
  max_history_messages: Type.Integer({ minimum: 2, default: 200, description: 'Session history sent to the model, oldest whole exchanges dropped first' }),
  dedup_enabled: Type.Boolean({ default: true }),
  dedup_scope: Type.Union([Type.Literal('round'), Type.Literal('turn')], { default: 'round', description: 'round: identical calls within one model response; turn: across the whole turn' }),
  tool_call_dedup_exempt: Names,
  strict_tool_parsing: Type.Boolean({ default: false }),
  max_iteration_behavior: Type.Union([Type.Literal('graceful_summary'), Type.Literal('error')], { default: 'graceful_summary' }),
  loop_detection: Type.Object({
    enabled: Type.Boolean({ default: true }),
    window_size: Type.Integer({ minimum: 2, default: 20 }),
    max_repeats: Type.Integer({ minimum: 1, default: 3 }),
    ignore_tools: Names,
    identical_output_min_elapsed_ms: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { default: null, description: 'null disables the identical-output abort' })
  }, { additionalProperties: false, default: {} }),
  tool_receipts: ToolReceiptsConfig
}, { additionalProperties: false })
export type RuntimeProfileConfig = Static<typeof RuntimeProfileConfig>

export const DEFAULT_AUTO_APPROVE = ['file_read', 'tool_search']

export const RiskProfileConfig = Type.Object({
  level: Type.Union([Type.Literal('readonly'), Type.Literal('supervised'), Type.Literal('full')], { default: 'supervised' }),
  auto_approve: Type.Array(Type.String(), { default: DEFAULT_AUTO_APPROVE }),
  always_ask: Names,
  excluded_tools: Names,
  allowed_tools: Type.Array(Type.String(), { default: [], description: 'Empty: no constraint' })
}, { additionalProperties: false })
export type RiskProfileConfig = Static<typeof RiskProfileConfig>

export const GatewayConfig = Type.Object({
  server: ServerConfig,
  log: LogConfig,
  auth: AuthConfig,
  ws: WsConfig,
  ui: UiConfig,
  turns: TurnsConfig,
  workspace: WorkspaceConfig,
  tools: ToolsConfig,
  default_agent: Type.String({ default: 'default' }),
  providers: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
  agents: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
  runtime_profiles: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
  risk_profiles: Type.Record(Type.String(), Type.Unknown(), { default: {} })
}, { additionalProperties: false })

type Base = Static<typeof GatewayConfig>
export type Config = Omit<Base, 'providers' | 'agents' | 'runtime_profiles' | 'risk_profiles'> & {
  providers: Record<string, ProviderConfig>
  agents: Record<string, AgentConfig>
  runtime_profiles: Record<string, RuntimeProfileConfig>
  risk_profiles: Record<string, RiskProfileConfig>
}
