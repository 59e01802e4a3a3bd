/**
 * The MCP client manager: one connection per configured server that some agent bundles,
 * connected once when the gateway starts (bounded by mcp.connect_timeout_ms, all in parallel)
 * and kept connected afterwards. Turns read a snapshot of the current wrappers when they start.
 */
import type { Logger } from 'pino'
import type { Config } from '../../schemas/config.js'
import type { McpToolSource, Tool } from '../tools/contract.js'
import { McpServerConnection, type McpServerStatus } from './connection.js'

export interface McpManagerOptions {
  config: Config
  env: NodeJS.ProcessEnv
  log: Logger
}

/** Servers no agent bundles are never started: nothing could use their tools. */
export function bundledServers (config: Config): string[] {
  const names = new Set<string>()
  for (const agent of Object.values(config.agents)) for (const s of agent.mcp_bundles) names.add(s)
  return [...names].filter((n) => config.mcp.servers[n] !== undefined).sort()
}

export class McpManager implements McpToolSource {
  private readonly connections: ReadonlyMap<string, McpServerConnection>

  private constructor (connections: ReadonlyMap<string, McpServerConnection>) {
    this.connections = connections
  }

  static async start (options: McpManagerOptions): Promise<McpManager> {
    const { config } = options
    const { mcp } = config
    const connections = new Map<string, McpServerConnection>()
    if (mcp.enabled) {
      for (const name of bundledServers(config)) {
        connections.set(name, new McpServerConnection(name, mcp.servers[name] as Config['mcp']['servers'][string], {
          connectTimeoutMs: mcp.connect_timeout_ms,
          callTimeoutMs: mcp.call_timeout_ms,
          maxOutputChars: mcp.max_output_chars,
          maxTools: mcp.max_tools_per_server,
          reconnectInitialMs: mcp.reconnect_initial_ms,
          reconnectMaxMs: mcp.reconnect_max_ms,
          env: options.env,
          log: options.log
        }))
      }
    }
    await Promise.all([...connections.values()].map(async (c) => await c.start()))
    return new McpManager(connections)
  }

  tools (servers: readonly string[]): Tool[] {
    return servers.flatMap((s) => this.connections.get(s)?.tools() ?? [])
  }

  status (): McpServerStatus[] {
    return [...this.connections.values()].map((c) => c.status())
  }

  /** True while some started server is not connected (its tools are missing or failing). */
  degraded (): boolean {
    return [...this.connections.values()].some((c) => c.status().state !== 'ready')
  }

  async close (): Promise<void> {
    await Promise.all([...this.connections.values()].map(async (c) => await c.close()))
  }
}
