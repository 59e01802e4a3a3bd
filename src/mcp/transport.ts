/**
 * Builds the SDK client transport of one configured MCP server. stdio children get a minimal
 * environment (the SDK's safe defaults plus what the config names), never the gateway's own:
 * the gateway's credentials are not an MCP server's business unless an operator hands one over.
 */
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { McpServerConfig } from '../../schemas/config.js'

export interface TransportBuild {
  transport: Transport
  /** Child stderr, for the connection to log; null for HTTP. */
  stderr: NodeJS.ReadableStream | null
  /** Gateway variables a `*_from_env` entry named but the environment does not have. */
  missingEnv: string[]
}

function fromEnv (map: Record<string, string>, env: NodeJS.ProcessEnv, missing: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [key, source] of Object.entries(map)) {
    const value = env[source]
    if (value === undefined) missing.push(source)
    else out[key] = value
  }
  return out
}

export function createTransport (server: McpServerConfig, env: NodeJS.ProcessEnv): TransportBuild {
  const missingEnv: string[] = []
  if (server.transport === 'stdio') {
    const transport = new StdioClientTransport({
      command: server.command as string,
      args: server.args,
      env: { ...server.env, ...fromEnv(server.env_from, env, missingEnv) },
      stderr: 'pipe',
      ...(server.cwd === undefined ? {} : { cwd: server.cwd })
    })
    return { transport, stderr: transport.stderr as NodeJS.ReadableStream | null, missingEnv }
  }
  const headers = { ...server.headers, ...fromEnv(server.headers_from_env, env, missingEnv) }
  const transport = new StreamableHTTPClientTransport(new URL(server.url as string), {
    requestInit: { headers },
    // Reconnecting is the connection's job (with its own backoff), not a second loop in the SDK.
    reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 }
  })
  return { transport, stderr: null, missingEnv }
}
