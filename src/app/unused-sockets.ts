/**
 * Connections that never carried a request. Browsers open spare sockets speculatively
 * (preconnect) and may leave them silent for minutes; Node's `closeIdleConnections()`, which
 * Fastify calls on close, does not count a socket that never started a request as idle, so
 * `server.close()` would wait for it and a graceful shutdown would last until the client gave up
 * or the shutdown timeout killed the process. Shutdown destroys these sockets: nothing was asked
 * on them, so nothing is cut short.
 */
import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

export interface UnusedSockets {
  /**
   * Once the server has stopped accepting (or `closing` settled), destroys every open socket that
   * has not carried a request or an upgrade; then waits for `closing`.
   */
  closeWith (closing: Promise<void>): Promise<void>
}

export function trackUnusedSockets (server: Server): UnusedSockets {
  const unused = new Set<Socket>()
  const used = (socket: Socket): void => { unused.delete(socket) }
  server.on('connection', (socket: Socket) => {
    unused.add(socket)
    socket.once('close', () => { unused.delete(socket) })
  })
  server.on('request', (req: { socket: Socket }) => { used(req.socket) })
  server.on('upgrade', (_req: unknown, socket: Socket) => { used(socket) })
  return {
    async closeWith (closing) {
      const state = { settled: false }
      const done = closing.finally(() => { state.settled = true })
      // Fastify runs its preClose hooks before it stops the listener; a socket accepted until then
      // is as unused as one accepted before.
      while (!state.settled && server.listening) await sleep(5)
      for (const socket of unused) socket.destroy()
      unused.clear()
      await done
    }
  }
}
