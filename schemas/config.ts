import { Type, type Static } from '@sinclair/typebox'
import type { HttpToolConfig } from './http-tools.js'

/**
 * Gateway configuration. Every key has a default, so an empty file (or none) gives the embedded
 * set-up: demo provider, loopback bind, auth mode `none`. Map entries (providers, agents,
 * profiles) are validated one by one against their entry schema so their defaults apply too.
 */

/** The longest wait one Node.js timer can hold (2^31 - 1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2_147_483_647

function names (description: string) {
  return Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { default: [], description })
}

export const ServerConfig = Type.Object({
  host: Type.String({ default: '127.0.0.1', description: 'Address to bind (env TOLLGATE_HOST); a non-loopback address needs auth.mode "jwt"' }),
  port: Type.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'Port to listen on (env TOLLGATE_PORT or PORT); 0 picks a free one' }),
  body_limit_bytes: Type.Integer({ minimum: 1024, default: 1_048_576, description: 'Largest HTTP body; a larger one is 413 PAYLOAD_TOO_LARGE' }),
  request_timeout_ms: Type.Integer({ minimum: 0, default: 0, description: '0: no timeout (SSE and ?wait=true hold requests open)' }),
  shutdown_timeout_ms: Type.Integer({ minimum: 0, default: 10_000, description: 'A graceful stop (SIGTERM, SIGINT) ends within this long: turns parked or cancelled, sockets closed with 1001' }),
  public_url: Type.Optional(Type.String({
    pattern: '^https?://',
    description: 'The URL clients and browsers use to reach the gateway: its host is served and its origin may open /v1/ws'
  })),
  sse_keepalive_ms: Type.Integer({
    minimum: 0, default: 15_000,
    description: 'A comment line is sent on every SSE stream this often while no event flows, so idle-cutting proxies keep it open; 0: none'
  }),
  cors: Type.Object({
    enabled: Type.Boolean({
      default: false,
      description: 'Answer CORS preflights and add Access-Control-* headers for the origins that may open /v1/ws ' +
        '(ws.allowed_origins, the server.public_url origin, loopback origins on a loopback bind); off: no CORS headers at all'
    }),
    max_age_s: Type.Integer({ minimum: 0, maximum: 86_400, default: 600, description: 'Access-Control-Max-Age of preflight answers' })
  }, { additionalProperties: false, default: {} }),
  allowed_hosts: Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
    default: [],
    maxItems: 256,
    description: 'Host names (no port) requests may address besides server.host and the public_url host: exact names or IPs, ' +
      '".example.com" for the name and its subdomains, "*" for any. With auth.mode "none" only loopback names are served'
  })
}, { additionalProperties: false, default: {} })

export const LogConfig = Type.Object({
  level: Type.Union([
    Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'),
    Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')
  ], { default: 'info', description: 'pino log level (env TOLLGATE_LOG_LEVEL)' }),
  tool_calls: Type.Boolean({ default: true, description: 'One info line per tool call start and end (arguments and results scrubbed and bounded)' }),
  max_field_chars: Type.Integer({ minimum: 64, default: 2048, description: 'Bound on tool arguments and results in log lines, in characters (UTF-16 code units)' })
}, { additionalProperties: false, default: {} })

export const JWT_ALGORITHMS = [
  'HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'
] as const
export type JwtAlgorithm = typeof JWT_ALGORITHMS[number]

function oneOrMany (description: string) {
  return Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })], { description })
}

export const AuthConfig = Type.Object({
  mode: Type.Union([Type.Literal('none'), Type.Literal('jwt'), Type.Literal('generated')], {
    default: 'none',
    description: 'none: one local principal, loopback bind only; jwt: bearer JWTs of your identity provider; generated: for trying it out ' +
      'anywhere, a random in-memory secret and one token for one principal (tenant local) printed at start, invalid after a restart (env TOLLGATE_AUTH_MODE)'
  }),
  generated_token_ttl_s: Type.Integer({
    minimum: 60, maximum: 604_800, default: 43_200, description: 'mode "generated": how long the token printed at start is valid'
  }),
  secret: Type.Optional(Type.String({ minLength: 32, description: 'HMAC shared secret (development); prefer secret_env' })),
  secret_env: Type.Optional(Type.String({ minLength: 1, description: 'Name of the environment variable holding the HMAC secret' })),
  jwks_url: Type.Optional(Type.String({ minLength: 1, description: 'http(s) URL of the issuer\'s JSON Web Key Set (asymmetric keys)' })),
  algorithms: Type.Array(Type.Union(JWT_ALGORITHMS.map((a) => Type.Literal(a))), {
    default: [], description: 'Allowlist; empty: HS256 with a secret, RS256/ES256/EdDSA with a JWKS'
  }),
  issuer: Type.Optional(oneOrMany('Expected iss claim, one or a list; required with mode "jwt"')),
  audience: Type.Optional(oneOrMany('Expected aud claim, one or a list; required with mode "jwt"')),
  clock_tolerance_s: Type.Integer({ minimum: 0, maximum: 300, default: 30, description: 'Leeway in seconds when checking a token\'s exp and nbf' }),
  tenant_claim: Type.String({ minLength: 1, default: 'tenant', description: 'Claim naming the caller\'s tenant: required in every token, without /' }),
  max_token_bytes: Type.Integer({ minimum: 256, maximum: 65_536, default: 8192, description: 'Largest accepted token; a larger one is 401 TOKEN_INVALID' }),
  jwks_timeout_ms: Type.Integer({ minimum: 100, default: 5000, description: 'Bound on one fetch of the JWKS' }),
  jwks_cooldown_ms: Type.Integer({ minimum: 0, default: 30_000, description: 'Minimum pause between refetches triggered by an unknown kid' }),
  jwks_cache_max_age_ms: Type.Integer({ minimum: 1000, default: 600_000, description: 'How long a fetched JWKS is used before it is fetched again' }),
  allow_query_token: Type.Boolean({
    default: false, description: 'Accept ?access_token= on /v1/ws (least preferred: URLs end up in logs and history)'
  })
}, { additionalProperties: false, default: {} })

export const WsConfig = Type.Object({
  heartbeat_ms: Type.Integer({ minimum: 0, default: 30_000, description: '0 disables pings' }),
  max_payload_bytes: Type.Integer({ minimum: 1024, default: 1_048_576, description: 'Largest client frame; a larger one closes the socket with 1009' }),
  max_subscriptions: Type.Integer({ minimum: 1, default: 256, description: 'Subscriptions one socket may hold; another is refused with TOO_MANY_SUBSCRIPTIONS' }),
  max_buffered_bytes: Type.Integer({ minimum: 1024, default: 4_194_304, description: 'Slow-consumer bound: a socket with more unsent bytes is closed with 1008' }),
  allowed_origins: Type.Array(Type.String(), {
    default: [],
    description: 'Browser origins allowed to open /v1/ws besides the server.public_url origin and, on a loopback bind, the gateway\'s own ' +
      'loopback origins; "*" for any (jwt only)'
  }),
  frame_rate: Type.Object({
    per_second: Type.Number({ exclusiveMinimum: 0, default: 50, description: 'Sustained client frames per second per socket' }),
    burst: Type.Integer({ minimum: 1, default: 100, description: 'Client frames a socket may send at once beyond the sustained rate' }),
    max_rejected: Type.Integer({ minimum: 1, default: 100, description: 'Refused frames (forgiven at per_second) before the socket is closed with 1008' })
  }, { additionalProperties: false, default: {} })
}, { additionalProperties: false, default: {} })

export const UiConfig = Type.Object({
  enabled: Type.Boolean({ default: true, description: 'Serve the browser client at / and the API reference page at /docs (files from public/)' })
}, { additionalProperties: false, default: {} })

export const TurnsConfig = Type.Object({
  approval_timeout_ms: Type.Integer({
    minimum: 1, maximum: MAX_TIMER_MS, default: 120_000, description: 'How long an approval request waits; agents and turns may ask for other values'
  }),
  max_approval_timeout_ms: Type.Integer({
    minimum: 1,
    maximum: MAX_TIMER_MS,
    default: 86_400_000,
    description: 'Ceiling on any approval timeout (agent or turn request): longer asks are capped to it'
  }),
  disconnect_grace_ms: Type.Integer({
    minimum: 0, default: 0,
    description: 'How long a turn outlives its owner connection (WebSocket, POST SSE stream, ?wait=true): a client that follows the turn ' +
      'again by then keeps it'
  }),
  turn_timeout_ms: Type.Integer({ minimum: 0, default: 600_000, description: '0: no limit' }),
  retention_ms: Type.Integer({
    minimum: 0,
    default: 3_600_000,
    description: 'How long a finished turn\'s events stay in the process for replays where no store keeps an event log ' +
      '(the memory store; SQLite and PostgreSQL answer from the store), and how long an idempotency_key answers its turn'
  }),
  max_events_per_turn: Type.Integer({ minimum: 16, default: 10_000, description: 'Replay buffer per turn; older events answer REPLAY_GAP' }),
  max_active_turns: Type.Integer({ minimum: 1, default: 256, description: 'Running turns of this process; another is 429 TOO_MANY_TURNS' }),
  max_active_turns_per_principal: Type.Integer({
    minimum: 1, default: 16, description: 'Counted across all instances when bus.kind is redis'
  }),
  max_event_output_bytes: Type.Integer({
    minimum: 256, default: 16_384, description: 'Bound on tool output carried in streamed events, in UTF-8 bytes (formerly max_event_output_chars)'
  }),
  max_steering_messages: Type.Integer({
    minimum: 1, maximum: 1024, default: 8,
    description: 'Steering messages that may wait for a running turn\'s next model call; one more is refused with STEERING_QUEUE_FULL'
  }),
  tool_arguments: Type.Object({
    // Far below the depth at which JSON.stringify, structuredClone and the other recursive walks of a value run out of stack.
    max_depth: Type.Integer({
      minimum: 2, maximum: 256, default: 64,
      description: 'Nesting levels of objects and arrays a tool call\'s arguments may have; a deeper call gets an error result and is not run'
    }),
    max_chars: Type.Integer({
      minimum: 1024, default: 4_194_304,
      description: 'Characters (UTF-16 code units) of JSON text a tool call\'s arguments may take (escapes not counted); a longer call gets an error result and is not run'
    })
  }, { additionalProperties: false, default: {} }),
  tool_progress: Type.Object({
    max_events_per_second: Type.Integer({
      minimum: 1, maximum: 100, default: 4,
      description: 'tool.progress events per call and second; a faster tool has its latest update sent when the second is over'
    }),
    max_events_per_call: Type.Integer({ minimum: 0, default: 500, description: 'tool.progress events of one call at most; 0: none' }),
    max_message_bytes: Type.Integer({
      minimum: 64, maximum: 4096, default: 512, description: 'Bound on a tool.progress message (UTF-8 bytes, after scrubbing)'
    })
  }, { additionalProperties: false, default: {} })
}, { additionalProperties: false, default: {} })

export const WorkspaceConfig = Type.Object({
  dir: Type.String({
    default: './workspace', description: 'Root of the workspaces: each tenant works in its own folder <dir>/<tenant-slug>/ and sees nothing else'
  }),
  per_session: Type.Boolean({
    default: false, description: 'true: each session gets its own folder <dir>/<tenant-slug>/<session-slug>/ and its tools see only that'
  })
}, { additionalProperties: false, default: {} })

export const MetricsConfig = Type.Object({
  enabled: Type.Boolean({ default: true, description: 'Serve GET /metrics (Prometheus text). It needs no credentials: keep it on a private network' }),
  prefix: Type.String({ default: 'tollgate_', pattern: '^([A-Za-z_:][A-Za-z0-9_:]*)?$', description: 'Prefix of every metric name' }),
  process_metrics: Type.Boolean({ default: true, description: 'Also export Node.js process metrics (CPU, memory, event loop lag, GC)' })
}, { additionalProperties: false, default: {} })

export const TracingConfig = Type.Object({
  enabled: Type.Boolean({ default: true, description: 'OpenTelemetry spans through @opentelemetry/api: a no-op unless the process registers an SDK' })
}, { additionalProperties: false, default: {} })

function CgroupLimitsConfig (whose: string, defaults: { memory_bytes: number, processes: number, cpus: number }) {
  return Type.Object({
    memory_bytes: Type.Integer({
      minimum: 16_777_216, default: defaults.memory_bytes,
      description: `Memory (resident and page cache) of ${whose}; over it the kernel reclaims, then kills a process of the command`
    }),
    processes: Type.Integer({ minimum: 8, default: defaults.processes, description: `Processes and threads of ${whose}` }),
    cpus: Type.Number({
      minimum: 0.01, maximum: 1024, default: defaults.cpus,
      description: `CPU time of ${whose}, in CPUs (1.5: one and a half cores); a command gets at most its tenant's. ` +
        'Tenants share a busy machine\'s CPUs equally whatever this says'
    })
  }, { additionalProperties: false, default: {} })
}

export const ToolsConfig = Type.Object({
  shell: Type.Object({
    timeout_ms: Type.Integer({ minimum: 100, default: 60_000, description: 'A command running longer is killed, its whole sandbox with it' }),
    max_output_bytes: Type.Integer({ minimum: 1024, default: 262_144, description: 'Bound on the output of one command' }),
    progress_after_ms: Type.Integer({
      minimum: 0, default: 1000,
      description: 'A command still running after this long streams its output lines as tool.progress events (the latest line first)'
    }),
    block_high_risk_commands: Type.Boolean({ default: true, description: 'Refuse commands the shell policy classifies as high risk, whatever the approval' }),
    require_approval_for_medium_risk: Type.Boolean({ default: true, description: 'Commands the shell policy classifies as medium risk run only after a person approved them' }),
    env_allowlist: Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), {
      default: ['PATH', 'LANG', 'LC_ALL', 'TZ'],
      description: 'The only gateway environment variables a command sees (plus HOME = its workspace)'
    }),
    sandbox: Type.Union([Type.Literal('bwrap'), Type.Literal('none')], {
      default: 'bwrap',
      description: 'bwrap: every command runs in a bubblewrap sandbox (probed at start; if it does not work, `shell` is not offered). ' +
        'none: commands run unconfined as the gateway user, with its file access and network'
    }),
    bwrap_path: Type.String({ minLength: 1, default: '/usr/bin/bwrap', description: 'The bubblewrap executable' }),
    sandbox_uid: Type.Integer({
      minimum: 1, maximum: 4_294_967_294, default: 1_879_048_192,
      description: 'When the gateway runs as root: the first uid of the range tenants\' sandboxed commands run as; each tenant gets ' +
        'sandbox_uid + a stable offset below sandbox_id_count derived from its name, and its workspace folder belongs to that uid. ' +
        'The default (0x70000000) lies in a range Linux distributions leave unallocated'
    }),
    sandbox_gid: Type.Integer({
      minimum: 1, maximum: 4_294_967_294, default: 1_879_048_192,
      description: 'When the gateway runs as root: the first gid of the range; a tenant\'s gid is sandbox_gid + its offset'
    }),
    sandbox_id_count: Type.Integer({
      minimum: 1, maximum: 1_073_741_824, default: 16_777_216,
      description: 'How many uids (and gids) tenants are spread over. Two tenants share ids only when their offsets collide ' +
        '(for n tenants, with probability about n²/(2 × count)); 1: every tenant runs as sandbox_uid. Every id of the range ' +
        'must exist in the gateway\'s user namespace, else shell is not offered'
    }),
    limits: Type.Object({
      cpu_seconds: Type.Integer({ minimum: 1, default: 60, description: 'CPU time per process (RLIMIT_CPU)' }),
      memory_bytes: Type.Integer({ minimum: 16_777_216, default: 2_147_483_648, description: 'Address space per process (RLIMIT_AS)' }),
      file_bytes: Type.Integer({ minimum: 1024, default: 268_435_456, description: 'Largest file a process may write (RLIMIT_FSIZE)' }),
      processes: Type.Integer({
        minimum: 8, default: 256,
        description: 'Processes of the sandbox user (RLIMIT_NPROC): per command for a gateway that is not root (each command has ' +
          'its own user namespace); for a root gateway, all running commands of one tenant together (the tenant\'s uid)'
      }),
      tmp_bytes: Type.Integer({ minimum: 1_048_576, default: 268_435_456, description: 'Size of the private /tmp of each command' })
    }, { additionalProperties: false, default: {}, description: 'Kernel limits of sandboxed commands (bwrap only)' }),
    cgroups: Type.Object({
      mode: Type.Union([Type.Literal('auto'), Type.Literal('off')], {
        default: 'auto',
        description: 'auto: where the gateway can make cgroup v1 pids, memory and cpu groups below its own (a root gateway on a ' +
          'host or VM), each tenant and each running command gets one with the limits below; elsewhere only the per-process ' +
          'limits and (root) the per-tenant uid apply, and the start-up log says why. off: never'
      }),
      command: CgroupLimitsConfig('one running command, all its processes together', {
        memory_bytes: 1_073_741_824, processes: 256, cpus: 1
      }),
      tenant: CgroupLimitsConfig('all running commands of one tenant together', {
        memory_bytes: 4_294_967_296, processes: 1024, cpus: 2
      })
    }, { additionalProperties: false, default: {}, description: 'Control-group limits of sandboxed commands (bwrap only)' }),
    process_ledger_dir: Type.Optional(Type.String({
      minLength: 1,
      description: 'Where running commands\' process groups are recorded, so the next start kills those a crashed gateway left behind. ' +
        'Default: tool-processes/ beside store.sqlite.path (./data/tool-processes)'
    }))
  }, { additionalProperties: false, default: {} }),
  files: Type.Object({
    max_read_bytes: Type.Integer({ minimum: 1, default: 1_048_576, description: 'Bound on what file_read reads from one file' }),
    max_write_bytes: Type.Integer({ minimum: 1, default: 1_048_576, description: 'Bound on what file_write writes in one call' })
  }, { additionalProperties: false, default: {} }),
  http: Type.Object({
    allow_hosts: Type.Array(Type.String(), { default: [], description: 'Private, loopback, link-local or metadata hosts and addresses http_request may reach anyway' }),
    allow_private: Type.Boolean({ default: false, description: 'true: http_request may reach every private, loopback and link-local address (not recommended)' }),
    timeout_ms: Type.Integer({ minimum: 100, default: 30_000, description: 'Bound on one http_request call' }),
    max_response_bytes: Type.Integer({ minimum: 1, default: 524_288, description: 'Bound on the response body http_request returns' }),
    max_redirects: Type.Integer({ minimum: 0, default: 5, description: 'Redirects http_request follows; each destination is checked again' })
  }, { additionalProperties: false, default: {} })
}, { additionalProperties: false, default: {} })

const ConnectionUrlEnv = Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'Name of an environment variable holding the URL (it may carry a password); wins over `url`' }))

export const StoreConfig = Type.Object({
  kind: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres'), Type.Literal('memory')], { default: 'sqlite', description: 'sqlite: embedded, one process; postgres: shared by many instances; memory: nothing survives a restart' }),
  sqlite: Type.Object({
    path: Type.String({ minLength: 1, default: './data/tollgate.db', description: 'Database file; its folder is created. The file is locked by one gateway process' })
  }, { additionalProperties: false, default: {} }),
  postgres: Type.Object({
    url: Type.String({ minLength: 1, default: 'postgres://127.0.0.1:5432/tollgate', description: 'Connection URL; prefer url_env when it carries a password' }),
    url_env: ConnectionUrlEnv,
    schema: Type.String({ pattern: '^[a-z_][a-z0-9_]{0,62}$', default: 'public', description: 'Created if missing; tables are named tollgate_*' }),
    max_connections: Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'Size of the connection pool' }),
    connect_timeout_ms: Type.Integer({ minimum: 100, default: 10_000, description: 'Bound on opening a connection' })
  }, { additionalProperties: false, default: {} }),
  event_log: Type.Boolean({ default: true, description: 'Persist every event so replay (after_seq) survives a restart or a Redis without persistence (ignored for memory)' }),
  event_retention_ms: Type.Integer({ minimum: 0, default: 86_400_000, description: 'Persisted events of turns finished longer ago are pruned; 0 keeps them' })
}, { additionalProperties: false, default: {} })

export const BusConfig = Type.Object({
  kind: Type.Union([Type.Literal('memory'), Type.Literal('redis')], { default: 'memory', description: 'redis: event streams, live fan-out and control shared by many instances' }),
  redis: Type.Object({
    url: Type.String({ minLength: 1, default: 'redis://127.0.0.1:6379', description: 'Connection URL; prefer url_env when it carries a password' }),
    url_env: ConnectionUrlEnv,
    key_prefix: Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,64}$', default: 'tollgate:', description: 'Prefix of every Redis key: instances with the same prefix share their turns' }),
    connect_timeout_ms: Type.Integer({ minimum: 100, default: 10_000, description: 'Bound on connecting' }),
    max_buffered_events: Type.Integer({ minimum: 1000, default: 100_000, description: 'Events held for Redis while it is unreachable; beyond this the oldest are dropped (the event log still has them)' }),
    unready_after_ms: Type.Integer({
      minimum: 0, default: 15_000, description: '/readyz answers 503 bus_unavailable once Redis has been unreachable this long; 0: never'
    })
  }, { additionalProperties: false, default: {} })
}, { additionalProperties: false, default: {} })

export const ClusterConfig = Type.Object({
  instance_id: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,128}$', description: 'Stable id of this process (e.g. a pod name): on restart it interrupts its own unfinished turns at once. Must be unique among live instances; default: random per start' })),
  lease_ms: Type.Integer({ minimum: 1000, default: 15_000, description: 'An instance that has not renewed its lease for this long is dead: another instance interrupts its running turns' }),
  control_timeout_ms: Type.Integer({ minimum: 100, default: 5000, description: 'How long a cancel, approval answer or backchannel probe waits for the instance running the turn' })
}, { additionalProperties: false, default: {} })

export const ShutdownConfig = Type.Object({
  running_turns: Type.Optional(Type.Union([Type.Literal('resume'), Type.Literal('cancel')], {
    description: 'resume: turns outlive the process — checkpointed at safe points, parked on a graceful stop and continued after a ' +
      'restart (or, with PostgreSQL, on another instance); cancel: a graceful stop cancels them and a crash interrupts them. ' +
      'Default: resume with a durable store (sqlite, postgres) and its event log, cancel with the memory store'
  })),
  tool_grace_ms: Type.Integer({
    minimum: 0, default: 5000,
    description: 'running_turns = resume: how long a graceful stop lets running tools finish before parking their turns anyway ' +
      '(a tool still running is then recorded interrupted when its turn resumes); keep it below server.shutdown_timeout_ms'
  })
}, { additionalProperties: false, default: {} })

export const ReceiptsConfig = Type.Object({
  keys: Type.Array(Type.Object({
    id: Type.String({
      pattern: '^[A-Za-z0-9_.-]{1,64}$', description: 'Recorded with each turn signed under this key (the key itself never is)'
    }),
    secret_env: Type.String({
      minLength: 1, description: 'Name of the environment variable holding the master key: base64 of at least 32 random bytes'
    })
  }, { additionalProperties: false }), {
    default: [],
    maxItems: 16,
    description: 'Receipt master keys, newest first: the first signs new turns, every listed one verifies the turns signed under it. ' +
      'Empty: a random key per process (receipts verify only in the process that made them)'
  })
}, { additionalProperties: false, default: {} })

/** The max_tokens an anthropic provider sends when its config names none (the API requires one). */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096

const UsdPerMtok = (what: string): ReturnType<typeof Type.Number> => Type.Number({ minimum: 0, description: `USD per million ${what}` })

/** One model's prices (USD per million tokens), as a provider's price list states them. */
export const ModelPrice = Type.Object({
  input_usd_per_mtok: UsdPerMtok('input (prompt) tokens'),
  output_usd_per_mtok: UsdPerMtok('output (completion) tokens'),
  cached_input_usd_per_mtok: Type.Optional(UsdPerMtok('cached input tokens; default: the input price')),
  reasoning_usd_per_mtok: Type.Optional(UsdPerMtok('reasoning tokens; default: the output price'))
}, { additionalProperties: false })
export type ModelPrice = Static<typeof ModelPrice>

export const ProviderPricing = Type.Object({
  input_usd_per_mtok: Type.Optional(UsdPerMtok('input (prompt) tokens of any model not listed in `models`')),
  output_usd_per_mtok: Type.Optional(UsdPerMtok('output (completion) tokens of any model not listed in `models`')),
  cached_input_usd_per_mtok: Type.Optional(UsdPerMtok('cached input tokens; default: the input price')),
  reasoning_usd_per_mtok: Type.Optional(UsdPerMtok('reasoning tokens; default: the output price')),
  models: Type.Optional(Type.Record(Type.String(), ModelPrice, { description: 'Per-model prices, for a provider serving several models' }))
}, {
  additionalProperties: false,
  description: 'Prices of the provider\'s models: each call\'s reported usage is priced (usage.cost_usd); a model without a price costs null, never 0'
})
export type ProviderPricing = Static<typeof ProviderPricing>

export const ProviderConfig = Type.Object({
  kind: Type.Union([Type.Literal('demo'), Type.Literal('openai'), Type.Literal('anthropic'), Type.Literal('openai-responses')], {
    description: 'demo: embedded scripted provider, NOT an LLM; openai: chat completions; anthropic: Messages API; openai-responses: Responses API'
  }),
  base_url: Type.Optional(Type.String({
    description: 'e.g. https://api.openai.com/v1; anthropic defaults to https://api.anthropic.com/v1, openai-responses to https://api.openai.com/v1'
  })),
  api_key_env: Type.Optional(Type.String({ description: 'Name of the environment variable holding the API key' })),
  model: Type.String({ default: 'gpt-4o-mini', description: 'Model name sent to the provider; an agent\'s model wins' }),
  native_tools: Type.Boolean({ default: true, description: 'false: tools go in the prompt (text protocol)' }),
  stream: Type.Boolean({ default: true, description: 'Ask for a streamed answer, so text reaches clients as it is written' }),
  stream_usage: Type.Boolean({
    default: true,
    description: 'Streaming requests ask for token usage (stream_options.include_usage); false for a server that refuses the option'
  }),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2, description: 'Sampling temperature sent to the provider; unset: the provider\'s default' })),
  timeout_ms: Type.Integer({ minimum: 100, default: 120_000, description: 'Bound on connecting, the response headers and each body pause' }),
  total_timeout_ms: Type.Integer({
    minimum: 100, default: 300_000, description: 'Bound on one model call: every attempt, wait and streamed byte'
  }),
  max_retries: Type.Integer({
    minimum: 0, maximum: 5, default: 2, description: 'Retries after a connection failure, 429 or 5xx, only before text was streamed'
  }),
  retry_initial_delay_ms: Type.Integer({ minimum: 0, default: 500, description: 'First backoff; doubled per retry, jittered to 50-100 %' }),
  retry_max_delay_ms: Type.Integer({ minimum: 0, default: 8000, description: 'Backoff cap; a longer Retry-After ends the call instead' }),
  max_response_bytes: Type.Integer({ minimum: 1024, default: 8_388_608, description: 'Largest provider answer read; a larger one fails the call with PROVIDER_BAD_RESPONSE' }),
  headers: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra request headers sent to the provider' }),
  step_delay_ms: Type.Integer({ minimum: 0, default: 0, description: 'demo only: pause between streamed pieces' }),
  pricing: Type.Optional(ProviderPricing),
  max_tokens: Type.Optional(Type.Integer({
    minimum: 1,
    description: `The most output tokens a call may take: anthropic max_tokens (always sent, default ${ANTHROPIC_DEFAULT_MAX_TOKENS}), ` +
      'openai-responses max_output_tokens, openai max_tokens (sent when set); a budget reserves this many per call (default budgets.assumed_max_output_tokens)'
  })),
  anthropic_version: Type.String({ default: '2023-06-01', description: 'anthropic only: the anthropic-version header' }),
  thinking_budget_tokens: Type.Optional(Type.Integer({
    minimum: 1024, description: 'anthropic only: extended thinking with this budget (below max_tokens); absent: no thinking'
  })),
  cache_breakpoints: Type.Array(Type.Union([Type.Literal('system'), Type.Literal('tools'), Type.Literal('history')]), {
    default: [], uniqueItems: true,
    description: 'anthropic only: prompt-caching breakpoints (cache_control) on the system prompt, the last tool, the last message'
  }),
  reasoning_effort: Type.Optional(Type.Union([Type.Literal('minimal'), Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')], {
    description: 'openai-responses only: reasoning.effort'
  })),
  reasoning_summary: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('concise'), Type.Literal('detailed')], {
    description: 'openai-responses only: reasoning.summary (summaries stream as reasoning.delta)'
  })),
  reasoning_carry: Type.Union([Type.Literal('encrypted_content'), Type.Literal('previous_response_id')], {
    default: 'encrypted_content',
    description: 'openai-responses only: how reasoning reaches the next call: store=false and the encrypted reasoning items sent back, ' +
      'or previous_response_id (the provider keeps the response)'
  })
}, { additionalProperties: false })
export type ProviderConfig = Static<typeof ProviderConfig>

/**
 * Who may use an agent. Every condition given must hold: the caller's tenant is one of
 * `tenants`, and the caller's token carries at least one of `scopes`.
 */
export const AgentAccess = Type.Object({
  tenants: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 128 }), {
    minItems: 1, maxItems: 1024, description: 'Tenants whose principals may use the agent; absent: any tenant'
  })),
  scopes: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 128 }), {
    minItems: 1, maxItems: 64, description: 'The caller needs at least one of these token scopes; absent: no scope is needed'
  }))
}, {
  additionalProperties: false,
  minProperties: 1,
  description: 'Who may start turns with this agent and list its tools (others get 403 AGENT_FORBIDDEN); absent: every principal'
})
export type AgentAccess = Static<typeof AgentAccess>

export const AgentConfig = Type.Object({
  provider: Type.String({ default: 'demo', description: 'Provider (a name under [providers]) this agent\'s turns use' }),
  model: Type.Optional(Type.String({ description: 'Model of this agent; unset: the provider\'s model' })),
  system_prompt: Type.String({
    default: 'You are Tollgate\'s assistant. Use the tools available to you when they help, then answer concisely.',
    description: 'System prompt of every turn of this agent'
  }),
  tools: Type.Array(Type.String(), { default: ['shell', 'file_read', 'file_write', 'http_request'], description: 'Tool bundle admitted for this agent' }),
  mcp_bundles: Type.Array(Type.String({ minLength: 1 }), { default: [], description: 'MCP servers (names under [mcp.servers]) whose tools this agent may use; none by default' }),
  delegate_agents: Type.Array(Type.String({ minLength: 1 }), { default: [], description: 'Other agents the `delegate` tool may hand a sub-task to (the agent itself always may)' }),
  runtime_profile: Type.String({ default: 'default', description: 'Runtime profile (a name under [runtime_profiles]): the loop\'s knobs' }),
  risk_profile: Type.String({ default: 'default', description: 'Risk profile (a name under [risk_profiles]): which calls ask for approval' }),
  approval_timeout_ms: Type.Optional(Type.Integer({
    minimum: 1, maximum: MAX_TIMER_MS, description: 'This agent\'s approval timeout; default turns.approval_timeout_ms'
  })),
  on_no_backchannel: Type.Union([Type.Literal('wait'), Type.Literal('deny')], {
    default: 'wait',
    description: 'An interactive turn\'s prompt-required call when no operator is connected: wait for one (REST, a later subscriber), ' +
      'or deny at once (audited as auto-deny)'
  }),
  access: Type.Optional(AgentAccess),
  fallback_providers: Type.Array(Type.String({ minLength: 1 }), {
    default: [], maxItems: 4,
    description: 'Providers (names under [providers]) tried in order, each with its own default model, when the call fails with a ' +
      'retryable error (after its own retries) before any text or reasoning streamed'
  }),
  show_reasoning: Type.Boolean({
    default: true, description: 'false: the model\'s reasoning (reasoning.delta events) is not sent to clients nor kept in the event log'
  })
}, { additionalProperties: false })
export type AgentConfig = Static<typeof AgentConfig>

export const ToolReceiptsConfig = Type.Object({
  enabled: Type.Boolean({ default: false, description: 'Sign every successful tool execution with an HMAC receipt (tg-receipt-…)' }),
  show_in_response: Type.Boolean({ default: false, description: 'Append the turn\'s receipts to its final text' }),
  inject_system_prompt: Type.Boolean({ default: true, description: 'Add a system-prompt section telling the model that results carry receipts' })
}, { additionalProperties: false, default: {} })

/**
 * Decides which admitted MCP tools a turn sees (never which exist: policy and denylist do that).
 * Patterns are exact names or contain one `*` wildcard (prefix*suffix).
 */
export const ToolFilterGroup = Type.Object({
  mode: Type.Union([Type.Literal('always'), Type.Literal('dynamic')], { default: 'dynamic', description: 'always: visible (and pre-activated when deferred); dynamic: visible when the user message contains a keyword' }),
  tools: Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 256, description: 'MCP tool names, or patterns with one * wildcard' }),
  keywords: Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { default: [], maxItems: 256, description: 'dynamic: words of the user message that make the group visible' })
}, { additionalProperties: false })
export type ToolFilterGroup = Static<typeof ToolFilterGroup>

export const RuntimeProfileConfig = Type.Object({
  max_tool_iterations: Type.Integer({ minimum: 0, default: 10, description: '0 means 10' }),
  parallel_tools: Type.Boolean({ default: false, description: 'Run a model response\'s calls in parallel when there are several, none needs approval and none is tool_search' }),
  max_tool_result_bytes: Type.Integer({
    minimum: 0, default: 50_000, description: 'UTF-8 bytes of a tool result kept in history; 0 disables (formerly max_tool_result_chars)'
  }),
  max_history_messages: Type.Integer({ minimum: 2, default: 200, description: 'Session history sent to the model, oldest whole exchanges dropped first' }),
  dedup_enabled: Type.Boolean({ default: true, description: 'A call identical to an earlier one (within dedup_scope) is not run again: it gets a deduplicated result' }),
  dedup_scope: Type.Union([Type.Literal('round'), Type.Literal('turn')], { default: 'round', description: 'round: identical calls within one model response; turn: across the whole turn' }),
  tool_call_dedup_exempt: names('Tools whose calls are never deduplicated (delegate never is)'),
  strict_tool_parsing: Type.Boolean({ default: false, description: 'Text-protocol providers (native_tools = false): no tool calls in text at all' }),
  max_iteration_behavior: Type.Union([Type.Literal('graceful_summary'), Type.Literal('error')], {
    default: 'graceful_summary',
    description: 'At max_tool_iterations: graceful_summary asks the model once more, without tools, for a summary; error fails the turn with MAX_ITERATIONS'
  }),
  loop_detection: Type.Object({
    enabled: Type.Boolean({ default: true, description: 'Watch the turn\'s successful calls for repeating patterns: warn, block, then fail with LOOP_DETECTED' }),
    window_size: Type.Integer({ minimum: 2, default: 20, description: 'How many of the turn\'s latest successful calls are examined' }),
    max_repeats: Type.Integer({ minimum: 1, default: 3, description: 'Identical consecutive calls before the warning; block and break follow at +1 and +2' }),
    ignore_tools: names('Tools whose calls loop detection does not count'),
    identical_output_min_elapsed_ms: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { default: null, description: 'null disables the identical-output abort' })
  }, { additionalProperties: false, default: {} }),
  tool_receipts: ToolReceiptsConfig,
  tool_filter_groups: Type.Array(ToolFilterGroup, { default: [], maxItems: 64, description: 'Which MCP tools a turn sees; none: all admitted MCP tools' })
}, { additionalProperties: false })
export type RuntimeProfileConfig = Static<typeof RuntimeProfileConfig>

export const DEFAULT_AUTO_APPROVE = ['file_read', 'tool_search']

const ruleTexts = (description: string): ReturnType<typeof Type.Array<ReturnType<typeof Type.String>>> =>
  Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { default: [], maxItems: 512, description })

/** `tool` or `tool(specifier)` entries; deny > ask > allow > the profile's other settings (docs/guides/permissions.md). */
export const PermissionRules = Type.Object({
  allow: ruleTexts('Calls these rules match run without asking, unless an ask or deny rule matches too (e.g. "shell(git status)", "shell(npm run test:*)", "file_write(notes/**)")'),
  ask: ruleTexts('Calls these rules match wait for a person\'s answer, unless a deny rule matches too'),
  deny: ruleTexts('Calls these rules match never run; the result names the rule (e.g. "shell(rm:*)")')
}, { additionalProperties: false, default: {} })

export const RiskProfileConfig = Type.Object({
  level: Type.Union([Type.Literal('readonly'), Type.Literal('supervised'), Type.Literal('full')], {
    default: 'supervised',
    description: 'readonly: only calls that just read run and nobody is asked; supervised: calls ask unless auto-approved or granted; full: every call runs'
  }),
  auto_approve: Type.Array(Type.String(), { default: DEFAULT_AUTO_APPROVE, description: 'Tools that run without a prompt under supervised' }),
  always_ask: names('Tools that always ask for approval'),
  excluded_tools: names('Tools agents with this profile never get (names compared trimmed and case-insensitively)'),
  allowed_tools: Type.Array(Type.String(), { default: [], description: 'Empty: no constraint' }),
  shell_network: Type.Boolean({
    default: false, description: 'Sandboxed shell commands of agents with this profile may reach the network (bwrap only; none always can)'
  }),
  permissions: PermissionRules,
  permissions_mode: Type.Union([Type.Literal('enforce'), Type.Literal('shadow')], {
    default: 'enforce', description: 'shadow: the rules are evaluated, logged and counted, but the profile\'s other settings still decide'
  })
}, { additionalProperties: false })
export type RiskProfileConfig = Static<typeof RiskProfileConfig>

/** One MCP server; `<server>__<tool>` names its tools, so the name has no `__` and no edge separators. */
export const MCP_SERVER_NAME = '^[A-Za-z0-9]+([-_][A-Za-z0-9]+)*$'

function stringMap (description: string) {
  return Type.Record(Type.String(), Type.String({ maxLength: 8192 }), { default: {}, description })
}

export const McpServerConfig = Type.Object({
  transport: Type.Union([Type.Literal('stdio'), Type.Literal('http')], { description: 'stdio: spawn command; http: Streamable HTTP at url' }),
  command: Type.Optional(Type.String({ minLength: 1, description: 'stdio: executable to spawn (no shell)' })),
  args: Type.Array(Type.String(), { default: [], description: 'stdio: arguments' }),
  env: stringMap('stdio: extra environment (the gateway\'s own environment is not inherited beyond PATH, HOME, USER, SHELL, TERM, LOGNAME)'),
  env_from: stringMap('stdio: VAR = "GATEWAY_VAR": copy a value from the gateway\'s environment (keeps secrets out of the file)'),
  cwd: Type.Optional(Type.String({ description: 'stdio: working directory' })),
  url: Type.Optional(Type.String({ pattern: '^https?://', description: 'http: Streamable HTTP endpoint' })),
  headers: stringMap('http: extra request headers'),
  headers_from_env: stringMap('http: Header = "GATEWAY_VAR": copy a value from the gateway\'s environment'),
  timeout_ms: Type.Optional(Type.Integer({ minimum: 100, description: 'Per-call timeout; default mcp.call_timeout_ms' }))
}, { additionalProperties: false })
export type McpServerConfig = Static<typeof McpServerConfig>

export const McpConfig = Type.Object({
  enabled: Type.Boolean({ default: true, description: 'false: no MCP server is connected and agents get no MCP tools' }),
  deferred_loading: Type.Boolean({ default: false, description: 'true: turns see a tool_search stub and a Deferred Tools prompt section instead of every MCP wrapper' }),
  connect_timeout_ms: Type.Integer({ minimum: 100, default: 10_000, description: 'Bound on connecting and listing tools at start (and on each reconnect)' }),
  call_timeout_ms: Type.Integer({ minimum: 100, default: 60_000, description: 'Per-call timeout of MCP tools; a server\'s timeout_ms wins' }),
  max_output_chars: Type.Integer({
    minimum: 1024, default: 262_144, description: 'Bound on the text one MCP call result is converted to, in characters (UTF-16 code units)'
  }),
  max_tools_per_server: Type.Integer({ minimum: 1, maximum: 1024, default: 128, description: 'Tools taken from one server; the rest are ignored with a warning' }),
  reconnect_initial_ms: Type.Integer({ minimum: 10, default: 500, description: 'First wait before reconnecting a lost server, doubled per attempt' }),
  reconnect_max_ms: Type.Integer({ minimum: 10, default: 30_000, description: 'Cap of the reconnect wait' }),
  servers: Type.Record(Type.String(), Type.Unknown(), { default: {}, description: 'name → McpServerConfig' })
}, { additionalProperties: false, default: {} })

export const DelegateConfig = Type.Object({
  max_depth: Type.Integer({ minimum: 1, maximum: 8, default: 2, description: 'Nesting bound: a sub-turn at this depth is not offered `delegate`' })
}, { additionalProperties: false, default: {} })

/** Schedules (`/v1/schedules`, src/schedule/): turns the gateway starts on cron expressions. */
export const SchedulesConfig = Type.Object({
  enabled: Type.Boolean({ default: true, description: 'false: no tick fires on this instance (the routes still answer)' }),
  max_per_principal: Type.Integer({
    minimum: 0, maximum: 10_000, default: 50, description: 'Schedules one principal may have; one more is 409 TOO_MANY_SCHEDULES'
  }),
  poll_ms: Type.Integer({
    minimum: 50, maximum: 60_000, default: 500, description: 'How often each instance looks for due ticks in the store (a tick fires up to this late)'
  }),
  late_tolerance_ms: Type.Integer({
    minimum: 1000, maximum: MAX_TIMER_MS, default: 60_000,
    description: 'A tick found later than this after its time was missed (no gateway ran): recorded as skipped unless catch_up'
  }),
  max_runs_kept: Type.Integer({ minimum: 1, maximum: 10_000, default: 200, description: 'Runs the store keeps per schedule; older ones go' })
}, { additionalProperties: false, default: {} })
export type SchedulesConfig = Static<typeof SchedulesConfig>

const Usd = (description: string): ReturnType<typeof Type.Number> => Type.Number({ exclusiveMinimum: 0, description })

/** Hard spending limits, checked before every model call (see docs/guides/unattended.md). */
export const BudgetsConfig = Type.Object({
  turn_usd: Type.Optional(Usd('USD one turn may spend; a turn request\'s budget_usd may lower it')),
  session_usd: Type.Optional(Usd('USD all turns of one session may spend together')),
  tenant_daily_usd: Type.Optional(Usd('USD all turns of one tenant may spend per UTC day; over it, new turns are refused')),
  on_exceeded: Type.Union([Type.Literal('fail'), Type.Literal('ask')], {
    default: 'fail',
    description: 'fail: the turn fails with BUDGET_EXCEEDED; ask: the turn waits on an approval of kind budget (yes raises that budget for the turn by its own size)'
  }),
  assumed_max_output_tokens: Type.Integer({
    minimum: 1, default: 4096, description: 'Output tokens a call is reserved for when its provider sets no max_tokens'
  })
}, { additionalProperties: false, default: {} })
export type BudgetsConfig = Static<typeof BudgetsConfig>

const WEBHOOK_EVENT_TYPES = [
  'approval.requested', 'approval.resolved', 'approval.expired', 'turn.completed', 'turn.failed', 'budget.exceeded',
  'schedule.run_failed'
] as const
export const NotificationType = Type.Union(WEBHOOK_EVENT_TYPES.map((t) => Type.Literal(t)), {
  description: 'What a notification announces (docs/guides/unattended.md)'
})
export type NotificationType = Static<typeof NotificationType>
export const NOTIFICATION_TYPES: readonly NotificationType[] = WEBHOOK_EVENT_TYPES

const WEBHOOK_ID = '^[A-Za-z0-9]+([-_][A-Za-z0-9]+)*$'

/** One receiver of notifications, as Standard Webhooks (docs/decisions/0262-notifications-as-standard-webhooks.md). */
export const WebhookConfig = Type.Object({
  id: Type.String({ pattern: WEBHOOK_ID, maxLength: 64, description: 'Names the webhook in deliveries and in escalate_to' }),
  url: Type.String({ pattern: '^https?://', maxLength: 2048, description: 'Where messages are POSTed' }),
  secret_env: Type.String({
    pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 128,
    description: 'Environment variable holding the signing secret (whsec_<base64>, as Standard Webhooks libraries expect)'
  }),
  events: Type.Array(NotificationType, { minItems: 1, uniqueItems: true, description: 'The types this webhook receives' }),
  tenants: Type.Optional(Type.Array(Type.String({ minLength: 1 }), {
    minItems: 1, description: 'Only messages of these tenants; absent: every tenant\'s'
  })),
  escalate_to: Type.Optional(Type.String({
    pattern: WEBHOOK_ID, maxLength: 64,
    description: 'Another webhook\'s id: an approval.requested this webhook received is announced there too once it has waited escalate_after_ms unanswered'
  })),
  escalate_after_ms: Type.Optional(Type.Integer({
    minimum: 1000, maximum: MAX_TIMER_MS, description: 'With escalate_to: how long an approval may wait before it is escalated'
  }))
}, { additionalProperties: false })
export type WebhookConfig = Static<typeof WebhookConfig>

/** Outbound notifications (see docs/guides/unattended.md). */
export const NotificationsConfig = Type.Object({
  webhooks: Type.Array(WebhookConfig, {
    default: [], maxItems: 64, description: 'Where notifications go, each a Standard Webhooks receiver with its own secret and event types'
  }),
  allow_private_targets: Type.Boolean({
    default: false, description: 'true: webhooks may point at private, loopback and link-local addresses (refused otherwise, as for HTTP tools)'
  }),
  retry_for_ms: Type.Integer({
    minimum: 1000, maximum: MAX_TIMER_MS, default: 86_400_000,
    description: 'A message not delivered within this long of being written is given up and listed as failed'
  }),
  initial_backoff_ms: Type.Integer({ minimum: 10, default: 1000, description: 'Wait before the first retry; doubles each attempt (with jitter)' }),
  max_backoff_ms: Type.Integer({ minimum: 10, maximum: MAX_TIMER_MS, default: 600_000, description: 'Longest wait between two attempts' }),
  timeout_ms: Type.Integer({ minimum: 100, default: 10_000, description: 'Bound on one attempt (connect to last byte)' }),
  poll_ms: Type.Integer({ minimum: 10, default: 500, description: 'How often each instance looks for due deliveries' }),
  lease_ms: Type.Integer({
    minimum: 1000, default: 30_000,
    description: 'A claimed delivery is another instance\'s to try again after this long if its claimer never reports back'
  })
}, { additionalProperties: false, default: {} })
export type NotificationsConfig = Static<typeof NotificationsConfig>

export const GatewayConfig = Type.Object({
  server: ServerConfig,
  log: LogConfig,
  metrics: MetricsConfig,
  tracing: TracingConfig,
  auth: AuthConfig,
  ws: WsConfig,
  ui: UiConfig,
  turns: TurnsConfig,
  workspace: WorkspaceConfig,
  tools: ToolsConfig,
  mcp: McpConfig,
  delegate: DelegateConfig,
  store: StoreConfig,
  bus: BusConfig,
  cluster: ClusterConfig,
  shutdown: ShutdownConfig,
  receipts: ReceiptsConfig,
  budgets: BudgetsConfig,
  schedules: SchedulesConfig,
  notifications: NotificationsConfig,
  default_agent: Type.String({ default: 'default', description: 'Agent of a turn that names none' }),
  providers: Type.Record(Type.String(), Type.Unknown(), { default: {}, description: 'Model providers by name; the embedded defaults define demo' }),
  agents: Type.Record(Type.String(), Type.Unknown(), { default: {}, description: 'Agents by name; the embedded defaults define default' }),
  runtime_profiles: Type.Record(Type.String(), Type.Unknown(), { default: {}, description: 'Loop knobs by name; the embedded defaults define default' }),
  risk_profiles: Type.Record(Type.String(), Type.Unknown(), { default: {}, description: 'Approval policies by name; the embedded defaults define default' }),
  http_tools: Type.Record(Type.String(), Type.Unknown(), { default: {}, description: 'HTTP tools by name: each an HttpToolConfig (schemas/http-tools.ts)' })
}, { additionalProperties: false })

type Base = Static<typeof GatewayConfig>
export type McpConfig = Omit<Static<typeof McpConfig>, 'servers'> & { servers: Record<string, McpServerConfig> }
export type Config = Omit<Base, 'providers' | 'agents' | 'runtime_profiles' | 'risk_profiles' | 'mcp' | 'http_tools'> & {
  http_tools: Record<string, HttpToolConfig>
  mcp: McpConfig
  providers: Record<string, ProviderConfig>
  agents: Record<string, AgentConfig>
  runtime_profiles: Record<string, RuntimeProfileConfig>
  risk_profiles: Record<string, RiskProfileConfig>
}

/**
 * Keys that were renamed, each still accepted under its old name: loading moves the value to the
 * new key and the gateway logs a deprecation warning at start (src/core/config-renames.ts). A `*`
 * segment stands for every entry of a named map. Both names in one configuration are an error.
 */
export const RENAMED_CONFIG_KEYS: ReadonlyArray<{ readonly old: string, readonly new: string }> = [
  // They always counted UTF-8 bytes; the `_chars` names said otherwise.
  { old: 'turns.max_event_output_chars', new: 'turns.max_event_output_bytes' },
  { old: 'runtime_profiles.*.max_tool_result_chars', new: 'runtime_profiles.*.max_tool_result_bytes' }
]
