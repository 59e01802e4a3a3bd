/**
 * `createGateway()`: Tollgate inside an application's own process, with the application's tools.
 * The same composition root as the `tollgate` server (buildServer): routes, approvals, durable
 * turns and the browser client all behave as documented for the server.
 */
import type { Logger } from 'pino'
import { loadConfig } from '../core/config.js'
import type { Config } from '../core/config.js'
import { buildServer, type Gateway } from '../app/server.js'
import type { Tool } from '../tools/contract.js'

export interface GatewayOptions {
  /**
   * Configuration in the shape of tollgate.toml (providers, agents, risk_profiles …), applied over
   * the defaults, then over `configFile` and TOLLGATE_* environment overrides if given.
   */
  config?: Record<string, unknown>
  /** A TOML or JSON config file read first (like TOLLGATE_CONFIG for the server). */
  configFile?: string
  /** The application's tools (`tool()`); every agent is offered them unless its risk profile excludes them. */
  tools?: readonly Tool[]
  /** Where secret_env and TOLLGATE_* overrides are read; default process.env. */
  env?: NodeJS.ProcessEnv
  /** A pino logger to log through; default: one from `log` config, on stdout. */
  logger?: Logger
}

export interface ListenOptions {
  /** Default 127.0.0.1: reachable from this machine only until you choose otherwise. */
  host?: string
  /** Default 0: any free port (read it from the returned URL). */
  port?: number
}

export interface EmbeddedGateway {
  /** Starts serving; resolves to the base URL (e.g. http://127.0.0.1:43121). */
  listen: (options?: ListenOptions) => Promise<string>
  /** Stops serving: running turns are parked or cancelled as on a server shutdown. */
  close: () => Promise<void>
}

/** The configuration with the application's tools admitted to every agent's bundle. */
function admitTools (config: Config, tools: readonly Tool[]): Config {
  for (const agent of Object.values(config.agents)) {
    for (const t of tools) if (!agent.tools.includes(t.name)) agent.tools.push(t.name)
  }
  return config
}

export function createGateway (options: GatewayOptions = {}): EmbeddedGateway {
  const tools = options.tools ?? []
  const env = options.env ?? process.env
  // Loaded now, so a configuration mistake throws here rather than at listen().
  const config = admitTools(loadConfig({
    env,
    ...(options.configFile === undefined ? {} : { file: options.configFile }),
    ...(options.config === undefined ? {} : { overrides: options.config })
  }), tools)
  let built: Promise<Gateway> | null = null
  let closed = false
  return {
    async listen (listenOptions = {}) {
      if (closed) throw new Error('this gateway was closed; create another')
      if (built !== null) throw new Error('this gateway is already listening')
      built = buildServer({ config, env, tools, ...(options.logger === undefined ? {} : { logger: options.logger }) })
      const gateway = await built
      return await gateway.app.listen({ host: listenOptions.host ?? '127.0.0.1', port: listenOptions.port ?? 0 })
    },
    async close () {
      closed = true
      if (built === null) return
      const gateway = await built.catch(() => null)
      await gateway?.close()
    }
  }
}
