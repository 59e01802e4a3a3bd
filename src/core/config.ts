/**
 * Config lifecycle: embedded defaults ← optional file (TOML or JSON) ← environment ← programmatic
 * overrides, validated once at start. Nothing below this module reads config files or env.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { Ajv, type ValidateFunction } from 'ajv'
import { parse as parseToml } from 'smol-toml'
import {
  GatewayConfig, ProviderConfig, AgentConfig, RuntimeProfileConfig, RiskProfileConfig, McpServerConfig, MCP_SERVER_NAME, type Config
} from '../../schemas/config.js'
import { HttpToolConfig, HTTP_TOOL_NAME } from '../../schemas/http-tools.js'
import { ownEntry } from './json/own.js'

export type { Config } from '../../schemas/config.js'

export class ConfigError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'ConfigError'
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
  if (env.TOLLGATE_LOG_LEVEL !== undefined && env.TOLLGATE_LOG_LEVEL !== '') out.log = { level: env.TOLLGATE_LOG_LEVEL }
  if (env.TOLLGATE_WORKSPACE !== undefined && env.TOLLGATE_WORKSPACE !== '') out.workspace = { dir: env.TOLLGATE_WORKSPACE }
  // The embedded store's file: the Docker image points it into its /data volume.
  if (env.TOLLGATE_SQLITE_PATH !== undefined && env.TOLLGATE_SQLITE_PATH !== '') out.store = { sqlite: { path: env.TOLLGATE_SQLITE_PATH } }
  return out
}

function compile (schema: object): ValidateFunction {
  return new Ajv({ useDefaults: true, allErrors: true, strict: false }).compile(schema)
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

function check (validate: ValidateFunction, value: unknown, where: string): void {
  if (validate(value)) return
  const first = (validate.errors ?? []).slice(0, 5)
    .map((e) => `${where}${e.instancePath} ${e.message ?? 'is invalid'}${e.params != null && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`)
  throw new ConfigError(`invalid configuration: ${first.join('; ')}`)
}

function validateMap (map: Plain, validate: ValidateFunction, where: string): void {
  for (const [name, entry] of Object.entries(map)) {
    if (!isPlain(entry)) throw new ConfigError(`invalid configuration: ${where}.${name} must be a table`)
    check(validate, entry, `${where}.${name}`)
  }
}

function crossCheck (config: Config): void {
  if (ownEntry(config.agents, config.default_agent) === undefined) {
    throw new ConfigError(`default_agent ${JSON.stringify(config.default_agent)} is not defined under [agents]`)
  }
  for (const [name, agent] of Object.entries(config.agents)) {
    if (ownEntry(config.providers, agent.provider) === undefined) throw new ConfigError(`agents.${name}.provider ${JSON.stringify(agent.provider)} is not defined under [providers]`)
    if (ownEntry(config.runtime_profiles, agent.runtime_profile) === undefined) throw new ConfigError(`agents.${name}.runtime_profile ${JSON.stringify(agent.runtime_profile)} is not defined`)
    if (ownEntry(config.risk_profiles, agent.risk_profile) === undefined) throw new ConfigError(`agents.${name}.risk_profile ${JSON.stringify(agent.risk_profile)} is not defined`)
  }
  crossCheckMcp(config)
  for (const name of Object.keys(config.http_tools)) {
    if (!new RegExp(HTTP_TOOL_NAME).test(name)) throw new ConfigError(`http_tools.${name}: a tool name is 1-64 of [A-Za-z0-9_-]`)
  }
  for (const [name, provider] of Object.entries(config.providers)) {
    if (provider.kind === 'openai' && (provider.base_url === undefined || provider.base_url === '')) {
      throw new ConfigError(`providers.${name}.base_url is required for kind "openai"`)
    }
  }
}

function crossCheckMcp (config: Config): void {
  const { mcp } = config
  const serverName = new RegExp(MCP_SERVER_NAME)
  for (const [name, server] of Object.entries(mcp.servers)) {
    if (!serverName.test(name) || name.length > 32) {
      throw new ConfigError(`mcp.servers.${name}: a server name is 1-32 letters and digits, optionally joined by single - or _ (its tools are named <server>__<tool>)`)
    }
    if (server.transport === 'stdio' && server.command === undefined) throw new ConfigError(`mcp.servers.${name}.command is required for transport "stdio"`)
    if (server.transport === 'http' && (server.url === undefined || !URL.canParse(server.url))) throw new ConfigError(`mcp.servers.${name}.url is required for transport "http" and must be an http(s) URL`)
  }
  if (mcp.reconnect_initial_ms > mcp.reconnect_max_ms) throw new ConfigError('mcp.reconnect_initial_ms must not exceed mcp.reconnect_max_ms')
  for (const [name, agent] of Object.entries(config.agents)) {
    for (const server of agent.mcp_bundles) {
      if (ownEntry(mcp.servers, server) === undefined) throw new ConfigError(`agents.${name}.mcp_bundles names ${JSON.stringify(server)}, which is not defined under [mcp.servers]`)
    }
    for (const other of agent.delegate_agents) {
      if (ownEntry(config.agents, other) === undefined) throw new ConfigError(`agents.${name}.delegate_agents names ${JSON.stringify(other)}, which is not defined under [agents]`)
    }
  }
}

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
  check(VALIDATORS.gateway, config, 'config')
  validateMap(config.providers as Plain, VALIDATORS.provider, 'providers')
  validateMap(config.agents as Plain, VALIDATORS.agent, 'agents')
  validateMap(config.runtime_profiles as Plain, VALIDATORS.runtime, 'runtime_profiles')
  validateMap(config.risk_profiles as Plain, VALIDATORS.risk, 'risk_profiles')
  validateMap((config.mcp as Plain).servers as Plain, VALIDATORS.mcpServer, 'mcp.servers')
  validateMap(config.http_tools as Plain, VALIDATORS.httpTool, 'http_tools')
  const typed = config as unknown as Config
  crossCheck(typed)
  return typed
}

/**
 * Whether turns outlive their process (`shutdown.running_turns`): by default they do when the
 * store does (SQLite, PostgreSQL), never with the memory store.
 */
export function runningTurnsPolicy (config: Config, durableStore: boolean): 'resume' | 'cancel' {
  return config.shutdown.running_turns ?? (durableStore ? 'resume' : 'cancel')
}
