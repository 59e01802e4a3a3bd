/**
 * Idle-connection client process: opens its share of the idle WebSockets and holds them,
 * reporting how many are still open on request. A process may hold at most ~20,000 open files
 * here, so the orchestrator splits the connections across several of these.
 */
import type { WebSocket } from 'ws'
import { announceReady, serveCommands } from './ipc.js'
import { closeSockets, openSockets } from './ws-clients.js'

async function main (): Promise<void> {
  let sockets: WebSocket[] = []
  serveCommands({
    open: async (m) => {
      const t0 = performance.now()
      const result = await openSockets(String(m.url), Number(m.count), Number(m.inFlight))
      sockets = result.sockets
      return { opened: sockets.length, failed: result.failed, firstError: result.firstError, ms: performance.now() - t0 }
    },
    check: () => ({ open: sockets.filter((ws) => ws.readyState === ws.OPEN).length }),
    close: async () => {
      await closeSockets(sockets)
      sockets = []
      return {}
    }
  })
  announceReady()
}

void main()
