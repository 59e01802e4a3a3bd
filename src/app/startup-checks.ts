/**
 * What a configuration cannot say about itself and start-up can: whether the environment
 * variables it names are set, and whether the tools its agents list exist. Checked before
 * anything is opened, every problem at once, each as one line naming the key and the fix.
 */
import { ConfigError, type Config } from '../core/config.js'
import { didYouMean } from '../core/config-problems.js'
import { BUILTIN_TOOL_NAMES } from '../tools/builtin/index.js'
import { ownEntry } from '../core/json/own.js'

/** `delegate` is added by the gateway itself, beside the built-ins and an embedder's tools. */
const GATEWAY_TOOL_NAMES = [...BUILTIN_TOOL_NAMES, 'delegate']

function isSet (env: NodeJS.ProcessEnv, name: string): boolean {
  const value = env[name]
  return value !== undefined && value !== ''
}

function unset (key: string, name: string, why: string): string {
  return `${key}: environment variable ${name} is not set; export ${name} before starting${why}`
}

function checkEnv (config: Config, env: NodeJS.ProcessEnv, problems: string[]): void {
  if (config.auth.mode === 'jwt' && config.auth.secret_env !== undefined && !isSet(env, config.auth.secret_env)) {
    problems.push(unset('auth.secret_env', config.auth.secret_env, ' (at least 32 bytes), or use jwks_url'))
  }
  // A provider no agent uses is optional: its key is only needed once an agent points at it.
  const usedProviders = new Map<string, string>()
  for (const [agent, settings] of Object.entries(config.agents)) {
    if (!usedProviders.has(settings.provider)) usedProviders.set(settings.provider, agent)
  }
  for (const [name, agent] of usedProviders) {
    const provider = ownEntry(config.providers, name)
    if (provider?.api_key_env !== undefined && !isSet(env, provider.api_key_env)) {
      problems.push(unset(`providers.${name}.api_key_env`, provider.api_key_env,
        ` (agents.${agent} uses this provider), or remove api_key_env if the server needs no key`))
    }
  }
  if (config.store.kind === 'postgres' && config.store.postgres.url_env !== undefined && !isSet(env, config.store.postgres.url_env)) {
    problems.push(unset('store.postgres.url_env', config.store.postgres.url_env, ', or give store.postgres.url instead'))
  }
  if (config.bus.kind === 'redis' && config.bus.redis.url_env !== undefined && !isSet(env, config.bus.redis.url_env)) {
    problems.push(unset('bus.redis.url_env', config.bus.redis.url_env, ', or give bus.redis.url instead'))
  }
  config.receipts.keys.forEach((key, i) => {
    if (!isSet(env, key.secret_env)) {
      problems.push(unset(`receipts.keys[${i}].secret_env`, key.secret_env, ' (base64 of at least 32 random bytes), or drop the key'))
    }
  })
}

function checkAgentTools (config: Config, extraToolNames: readonly string[], problems: string[]): void {
  const known = [...GATEWAY_TOOL_NAMES, ...extraToolNames]
  const knownSet = new Set(known)
  for (const [agent, settings] of Object.entries(config.agents)) {
    for (const name of settings.tools) {
      if (knownSet.has(name)) continue
      const hint = didYouMean(name, known)
      problems.push(`agents.${agent}.tools: unknown tool ${JSON.stringify(name)}` +
        (hint !== '' ? hint : `; the tools are ${known.join(', ')} (MCP tools come through mcp_bundles)`))
    }
  }
}

/** Throws one ConfigError listing every problem; `extraToolNames` are the embedder's tools. */
export function checkStartup (config: Config, env: NodeJS.ProcessEnv, extraToolNames: readonly string[]): void {
  const problems: string[] = []
  checkEnv(config, env, problems)
  checkAgentTools(config, extraToolNames, problems)
  if (problems.length > 0) throw ConfigError.of(problems)
}
