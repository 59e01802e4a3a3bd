/** Config snippets for the fixture MCP servers in test/fixtures/mcp/. */
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const STDIO_FIXTURE = fileURLToPath(new URL('../fixtures/mcp/stdio-server.ts', import.meta.url))

/** The stdio fixture spawned as `node --import tsx test/fixtures/mcp/stdio-server.ts`. */
export function stdioServerConfig (options: { log?: string, env?: Record<string, string>, envFrom?: Record<string, string> } = {}): Record<string, unknown> {
  return {
    transport: 'stdio',
    command: process.execPath,
    args: ['--import', 'tsx', STDIO_FIXTURE, ...(options.log === undefined ? [] : ['--log', options.log])],
    cwd: ROOT,
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.envFrom === undefined ? {} : { env_from: options.envFrom })
  }
}

export function httpServerConfig (url: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { transport: 'http', url, ...extra }
}

export async function waitUntil (check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
