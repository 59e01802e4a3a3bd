/**
 * A tool that cuts every WebSocket of the gateway abruptly (no close frame, like a network
 * failure) while it runs, then returns normally: the events that follow are published while the
 * clients are disconnected, which is exactly what a resume must recover.
 */
import type { Gateway } from '../../src/app/server.js'
import { defineTool, ok, type Tool } from '../../src/tools/contract.js'
import { startGateway, type TestGateway } from './gateway.js'
import { createProbes, probeOverrides } from './tools.js'

export interface SocketDropper {
  tool: Tool
  /** Set once the gateway exists (the tool is built before it). */
  attach (gateway: Gateway): void
  /** How many sockets it cut so far. */
  dropped (): number
}

export function createSocketDropper (): SocketDropper {
  let gateway: Gateway | null = null
  let count = 0
  const tool = defineTool({
    name: 'drop_sockets',
    description: 'test tool: terminates every WebSocket of the gateway, then succeeds',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    async execute () {
      if (gateway === null) throw new Error('socket dropper is not attached to a gateway')
      for (const client of gateway.app.websocketServer.clients) {
        client.terminate()
        count += 1
      }
      return ok('sockets dropped')
    }
  })
  return {
    tool,
    attach: (g) => { gateway = g },
    dropped: () => count
  }
}

/**
 * A gateway with the probe tools and the socket dropper admitted and auto-approved (except
 * `risky`), the dropper attached: the set-up of every reconnect-and-resume test.
 */
export async function startDropperGateway (extra: Record<string, unknown> = {}): Promise<{ g: TestGateway, dropper: SocketDropper }> {
  const probes = createProbes()
  const dropper = createSocketDropper()
  const g = await startGateway({
    tools: [...probes.tools, dropper.tool],
    overrides: probeOverrides({
      agents: { default: { tools: ['probe', 'risky', 'drop_sockets'] } },
      risk_profiles: { default: { auto_approve: ['probe', 'drop_sockets'] } },
      ...extra
    })
  })
  dropper.attach(g.gateway)
  return { g, dropper }
}
