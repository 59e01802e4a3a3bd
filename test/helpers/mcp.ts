/** Config snippets for the fixture MCP servers in test/fixtures/mcp/. */
import { fileURLToPath } from 'node:url'
import type { EventEnvelope, TurnEvent } from '../../schemas/events.js'
import type { TestGateway, TestSocket } from './gateway.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const STDIO_FIXTURE = fileURLToPath(new URL('../fixtures/mcp/stdio-server.ts', import.meta.url))

/** The stdio fixture spawned as `node --import tsx test/fixtures/mcp/stdio-server.ts`. */
export function stdioServerConfig (options: {
  log?: string, env?: Record<string, string>, envFrom?: Record<string, string>
} = {}): Record<string, unknown> {
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

/** Starts a turn over a fresh WebSocket (the turn's owner and backchannel) and waits for its end. */
export async function runTurn (
  g: TestGateway, request: Record<string, unknown>
): Promise<{ turnId: string, events: EventEnvelope[], socket: TestSocket }> {
  const socket = await g.socket()
  const accepted = await socket.request({ type: 'turn.start', ...request })
  if (accepted.type !== 'turn.accepted') throw new Error(`turn refused: ${JSON.stringify(accepted)}`)
  const events = await socket.waitForTerminal(accepted.turn_id, 20_000)
  return { turnId: accepted.turn_id as string, events, socket }
}

export function toolResults (events: readonly EventEnvelope[]): Array<Extract<TurnEvent, { kind: 'tool_result' }>> {
  return events.flatMap((e) => (e.event.kind === 'tool_result' ? [e.event] : []))
}

/** Names of the tools one recorded provider request advertised. */
export function advertised (g: TestGateway, requestIndex: number): string[] {
  const request = g.provider.requests[requestIndex]
  if (request === undefined) throw new Error(`no provider request #${requestIndex}; got ${g.provider.requests.length}`)
  return (request.body.tools ?? []).map((t) => t.function.name)
}

export function systemPrompt (g: TestGateway, requestIndex: number): string {
  const first = g.provider.requests[requestIndex]?.body.messages[0]
  return first?.role === 'system' ? first.content ?? '' : ''
}
