/**
 * Config lifecycle: embedded defaults ← optional file (TOML or JSON) ← environment ← programmatic
 * overrides, validated once at start. Nothing below this module reads config files or env.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { Ajv, type ValidateFunction } from 'ajv'
import { parse as parseToml } from 'smol-toml'
import {
  GatewayConfig, ProviderConfig, AgentConfig, RuntimeProfileConfig, RiskProfileConfig, McpServerConfig, MCP_SERVER_NAME,
  ANTHROPIC_DEFAULT_MAX_TOKENS, type Config
} from '../../schemas/config.js'
import { HttpToolConfig, HTTP_TOOL_NAME } from '../../schemas/http-tools.js'
import { ownEntry } from './json/own.js'
import { didYouMean, problemsMessage, schemaProblems } from './config-problems.js'
import { applyRenamedKeys, type DeprecatedKey } from './config-renames.js'

export type { Config } from '../../schemas/config.js'

export class ConfigError extends Error {
  /** One line per problem, each naming the key and the fix; all of them, not just the first. */
  readonly problems: readonly string[]

  constructor (message: string, problems: readonly string[] = [message]) {
    super(message)
    this.name = 'ConfigError'
    this.problems = problems
  }

  static of (problems: readonly string[]): ConfigError {
    return new ConfigError(problemsMessage(problems), problems)
  }
}

const EMBEDDED_DEFAULTS = {
  providers: { demo: { kind: 'demo' } },
  agents: { default: {} },
  runtime_profiles: { default: {} },
  risk_profiles: { default: {} }
}

type Plain = Record<string, unknown>

function isPlain (v: unknown): v is Plain {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Objects merge key by key; arrays and scalars from `over` replace. */
export function deepMerge (base: unknown, over: unknown): unknown {
  if (!isPlain(base) || !isPlain(over)) return over === undefined ? base : over
  const out: Plain = { ...base }
  for (const [k, v] of Object.entries(over)) out[k] = deepMerge(base[k], v)
  return out
}

function readConfigFile (path: string): unknown {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as Error).message}`)
  }
  try {
    return path.endsWith('.json') ? JSON.parse(text) : parseToml(text)
  } catch (err) {
    throw new ConfigError(`cannot parse config file ${path}: ${(err as Error).message}`)
  }
}

function envOverrides (env: NodeJS.ProcessEnv): Plain {
  const server: Plain = {}
  const port = env.TOLLGATE_PORT ?? env.PORT
  if (port !== undefined && port !== '') server.port = Number(port)
  if (env.TOLLGATE_HOST !== undefined && env.TOLLGATE_HOST !== '') server.host = env.TOLLGATE_HOST
  const out: Plain = { server }
  if (env.TOLLGATE_PUBLIC_URL !== undefined && env.TOLLGATE_PUBLIC_URL !== '') server.public_url = env.TOLLGATE_PUBLIC_URL
  // For a container tried without a config file: `generated` needs no identity provider.
  if (env.TOLLGATE_AUTH_MODE !== undefined && env.TOLLGATE_AUTH_MODE !== '') out.auth = { mode: env.TOLLGATE_AUTH_MODE }
  if (env.TOLLGATE_LOG_LEVEL !== undefined && env.TOLLGATE_LOG_LEVEL !== '') out.log = { level: env.TOLLGATE_LOG_LEVEL }
  if (env.TOLLGATE_WORKSPACE !== undefined && env.TOLLGATE_WORKSPACE !== '') out.workspace = { dir: env.TOLLGATE_WORKSPACE }
  // The embedded store's file: the Docker image points it into its /data volume.
  if (env.TOLLGATE_SQLITE_PATH !== undefined && env.TOLLGATE_SQLITE_PATH !== '') out.store = { sqlite: { path: env.TOLLGATE_SQLITE_PATH } }
  return out
}

function compile (schema: object): ValidateFunction {
  // verbose: errors carry the schema and value they are about, so a message can list allowed values.
  return new Ajv({ useDefaults: true, allErrors: true, strict: false, verbose: true }).compile(schema)
}

// Compiled once per process: the schemas are constants, and compiling them on every load made
// each gateway start (and each test) pay ~150 ms.
const VALIDATORS = {
  gateway: compile(GatewayConfig),
  provider: compile(ProviderConfig),
  agent: compile(AgentConfig),
  runtime: compile(RuntimeProfileConfig),
  risk: compile(RiskProfileConfig),
  mcpServer: compile(McpServerConfig),
  httpTool: compile(HttpToolConfig)
}

/** Validates one value, adding a line per problem; true when it is valid. */
function check (validate: ValidateFunction, value: unknown, where: string, problems: string[]): boolean {
  if (validate(value)) return true
  problems.push(...schemaProblems(validate.errors ?? [], where))
  return false
}

/** Validates every entry of a map the gateway schema leaves open; the names of the valid ones. */
function validateMap (map: unknown, validate: ValidateFunction, where: string, problems: string[]): void {
  if (!isPlain(map)) return
  for (const [name, entry] of Object.entries(map)) {
    if (!isPlain(entry)) problems.push(`${where}.${name} must be a table (got ${JSON.stringify(entry)})`)
    else check(validate, entry, `${where}.${name}`, problems)
  }
}

function undefinedName (key: string, value: string, section: string, names: Record<string, unknown>): string {
  const hint = didYouMean(value, Object.keys(names))
  return `${key} ${JSON.stringify(value)} is not defined under [${section}]` +
    (hint !== '' ? hint : `; define [${section}.${value}] or name one of: ${Object.keys(names).join(', ') || '(none)'}`)
}

function crossCheck (config: Config, problems: string[]): void {
  if (ownEntry(config.agents, config.default_agent) === undefined) {
    problems.push(undefinedName('default_agent', config.default_agent, 'agents', config.agents))
  }
  for (const [name, agent] of Object.entries(config.agents)) {
    if (ownEntry(config.providers, agent.provider) === undefined) problems.push(undefinedName(`agents.${name}.provider`, agent.provider, 'providers', config.providers))
    if (ownEntry(config.runtime_profiles, agent.runtime_profile) === undefined) problems.push(undefinedName(`agents.${name}.runtime_profile`, agent.runtime_profile, 'runtime_profiles', config.runtime_profiles))
    if (ownEntry(config.risk_profiles, agent.risk_profile) === undefined) problems.push(undefinedName(`agents.${name}.risk_profile`, agent.risk_profile, 'risk_profiles', config.risk_profiles))
    for (const fallback of agent.fallback_providers) {
      if (ownEntry(config.providers, fallback) === undefined || fallback === agent.provider) {
        problems.push(`agents.${name}.fallback_providers: ${JSON.stringify(fallback)} is not another provider defined under [providers]`)
      }
    }
  }
  crossCheckMcp(config, problems)
  for (const name of Object.keys(config.http_tools)) {
    if (!new RegExp(HTTP_TOOL_NAME).test(name)) problems.push(`http_tools.${name}: a tool name is 1-64 of [A-Za-z0-9_-]`)
  }
  for (const [name, provider] of Object.entries(config.providers)) {
    if (provider.kind === 'openai' && (provider.base_url === undefined || provider.base_url === '')) {
      problems.push(`providers.${name}.base_url is required for kind "openai"; add the server's URL, e.g. base_url = "https://api.openai.com/v1"`)
    }
    // Anthropic refuses a thinking budget that leaves nothing of max_tokens for the answer.
    if (provider.kind === 'anthropic' && provider.thinking_budget_tokens !== undefined &&
      provider.thinking_budget_tokens >= (provider.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS)) {
      throw new ConfigError(`providers.${name}.thinking_budget_tokens must be below max_tokens (${provider.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS})`)
    }
  }
  checkUrls(config, problems)
}

/** A URL a person typed without its scheme would only fail at the first request: say so at start. */
function checkUrl (key: string, value: string | undefined, schemes: readonly string[], problems: string[]): void {
  if (value === undefined || value === '') return
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]?.toLowerCase()
  if (scheme === undefined) {
    problems.push(`${key} ${JSON.stringify(value)} has no scheme; write it as "${schemes[0] ?? 'https'}://${value.replace(/^\/+/, '')}"`)
  } else if (!schemes.includes(scheme)) {
    problems.push(`${key} ${JSON.stringify(value)} must start with ${schemes.map((s) => `${s}://`).join(' or ')}`)
  } else if (!URL.canParse(value)) {
    problems.push(`${key} ${JSON.stringify(value)} is not a valid URL`)
  }
}

function checkUrls (config: Config, problems: string[]): void {
  for (const [name, provider] of Object.entries(config.providers)) checkUrl(`providers.${name}.base_url`, provider.base_url, ['https', 'http'], problems)
  checkUrl('auth.jwks_url', config.auth.jwks_url, ['https', 'http'], problems)
  if (config.store.kind === 'postgres' && config.store.postgres.url_env === undefined) {
    checkUrl('store.postgres.url', config.store.postgres.url, ['postgres', 'postgresql'], problems)
  }
  if (config.bus.kind === 'redis' && config.bus.redis.url_env === undefined) {
    checkUrl('bus.redis.url', config.bus.redis.url, ['redis', 'rediss'], problems)
  }
}

function crossCheckMcp (config: Config, problems: string[]): void {
  const { mcp } = config
  const serverName = new RegExp(MCP_SERVER_NAME)
  for (const [name, server] of Object.entries(mcp.servers)) {
    if (!serverName.test(name) || name.length > 32) {
      problems.push(`mcp.servers.${name}: a server name is 1-32 letters and digits, optionally joined by single - or _ (its tools are named <server>__<tool>); rename it`)
    }
    if (server.transport === 'stdio' && server.command === undefined) problems.push(`mcp.servers.${name}.command is required for transport "stdio"; add the executable to spawn`)
    if (server.transport === 'http' && (server.url === undefined || !URL.canParse(server.url))) problems.push(`mcp.servers.${name}.url is required for transport "http" and must be an http(s) URL`)
  }
  if (mcp.reconnect_initial_ms > mcp.reconnect_max_ms) problems.push('mcp.reconnect_initial_ms must not exceed mcp.reconnect_max_ms; lower it or raise reconnect_max_ms')
  for (const [name, agent] of Object.entries(config.agents)) {
    for (const server of agent.mcp_bundles) {
      if (ownEntry(mcp.servers, server) === undefined) problems.push(`agents.${name}.mcp_bundles names ${JSON.stringify(server)}, which is not defined under [mcp.servers]${didYouMean(server, Object.keys(mcp.servers))}`)
    }
    for (const other of agent.delegate_agents) {
      if (ownEntry(config.agents, other) === undefined) problems.push(`agents.${name}.delegate_agents names ${JSON.stringify(other)}, which is not defined under [agents]${didYouMean(other, Object.keys(config.agents))}`)
    }
  }
}

/** Where a loaded configuration keeps the old key names it was given. */
const DEPRECATED_KEYS = Symbol('deprecated configuration keys')

export interface LoadConfigOptions {
  /** Path of a TOML or JSON file; defaults to $TOLLGATE_CONFIG. */
  file?: string
  env?: NodeJS.ProcessEnv
  /** Applied last (tests, embedding). */
  overrides?: unknown
}

export function loadConfig (options: LoadConfigOptions = {}): Config {
  const env = options.env ?? process.env
  const file = options.file ?? (env.TOLLGATE_CONFIG !== undefined && env.TOLLGATE_CONFIG !== '' ? env.TOLLGATE_CONFIG : undefined)
  let merged: unknown = EMBEDDED_DEFAULTS
  if (file !== undefined) merged = deepMerge(merged, readConfigFile(resolve(file)))
  merged = deepMerge(merged, envOverrides(env))
  if (options.overrides !== undefined) merged = deepMerge(merged, options.overrides)
  const config = structuredClone(merged) as Plain
  const problems: string[] = []
  const deprecated = applyRenamedKeys(config, problems)
  check(VALIDATORS.gateway, config, '', problems)
  validateMap(config.providers, VALIDATORS.provider, 'providers', problems)
  validateMap(config.agents, VALIDATORS.agent, 'agents', problems)
  validateMap(config.runtime_profiles, VALIDATORS.runtime, 'runtime_profiles', problems)
  validateMap(config.risk_profiles, VALIDATORS.risk, 'risk_profiles', problems)
  validateMap(isPlain(config.mcp) ? config.mcp.servers : undefined, VALIDATORS.mcpServer, 'mcp.servers', problems)
  validateMap(config.http_tools, VALIDATORS.httpTool, 'http_tools', problems)
  const typed = config as unknown as Config
  if (problems.length === 0) crossCheck(typed, problems)
  else {
    // The cross-checks read the typed shape, which schema problems may have broken: what they
    // can still say is listed too, and a shape they cannot read is already reported above.
    try { crossCheck(typed, problems) } catch {}
  }
  if (problems.length > 0) throw ConfigError.of(problems)
  // Not a key of the configuration: a hidden property, so nothing that serialises or copies a
  // configuration carries it, and the gateway started with this object warns about it.
  Object.defineProperty(typed, DEPRECATED_KEYS, { value: deprecated, enumerable: false })
  return typed
}

/** The old key names `loadConfig` accepted for this configuration (none for one built otherwise). */
export function deprecatedKeys (config: Config): readonly DeprecatedKey[] {
  const found: unknown = (config as Config & { [DEPRECATED_KEYS]?: unknown })[DEPRECATED_KEYS]
  return Array.isArray(found) ? found as DeprecatedKey[] : []
}

/**
 * Whether turns outlive their process (`shutdown.running_turns`): by default they do when the
 * store does (SQLite, PostgreSQL), never with the memory store.
 */
export function runningTurnsPolicy (config: Config, durableStore: boolean): 'resume' | 'cancel' {
  return config.shutdown.running_turns ?? (durableStore ? 'resume' : 'cancel')
}
