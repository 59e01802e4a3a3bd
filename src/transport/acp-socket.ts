/**
 * `/v1/acp`: the Agent Client Protocol over a WebSocket (subprotocol `tollgate.acp.v1`), one
 * JSON-RPC message per text frame, for editors that run in a browser. The same agent as
 * `tollgate acp` (src/acp/agent.ts), backed by the turn service directly (acp-backend.ts). The
 * socket rules of /v1/ws apply: frame rate limit, frame size (`ws.max_payload_bytes`), token
 * expiry, slow consumers; closing the socket cancels the turns it owns.
 */
import type { AnyMessage, Stream } from '@agentclientprotocol/sdk'
import type { WebSocket } from 'ws'
import type { Gateway } from '../app/gateway.js'
import { whenExpired } from '../auth/expiry.js'
import { hasScope, principalKey, type Principal } from '../auth/principal.js'
import { FrameRateLimiter } from '../core/security/frame-rate-limit.js'
import { createAcpAgent } from '../acp/agent.js'
import { tollgateVersion } from '../acp/version.js'
import { gatewayBackend } from './acp-backend.js'
import { isSlowConsumer, logSlowConsumer } from './slow-consumer.js'

export const ACP_PROTOCOL = 'tollgate.acp.v1'

/** JSON-RPC's answer to a frame that is not JSON (no id can be known). */
const PARSE_ERROR = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the frame is not JSON' } })
const RATE_ERROR = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'RATE_LIMITED: too many frames; slow down' } })

/** The socket as the SDK's message stream. */
function socketStream (gateway: Gateway, socket: WebSocket, connectionId: string): Stream {
  const limiter = new FrameRateLimiter({
    perSecond: gateway.config.ws.frame_rate.per_second,
    burst: gateway.config.ws.frame_rate.burst,
    maxRejected: gateway.config.ws.frame_rate.max_rejected
  })
  const readable = new ReadableStream<AnyMessage>({
    start: (controller) => {
      socket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
        const verdict = limiter.take()
        if (verdict === 'close') {
          socket.close(1008, 'frame rate limit exceeded')
          return
        }
        if (verdict === 'reject') {
          socket.send(RATE_ERROR)
          return
        }
        const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8')
        let message: unknown
        try {
          message = JSON.parse(text)
        } catch {
          socket.send(PARSE_ERROR)
          return
        }
        // The SDK answers anything that is not a JSON-RPC message itself.
        controller.enqueue(message as AnyMessage)
      })
      socket.on('close', () => {
        try { controller.close() } catch {}
      })
    }
  })
  const writable = new WritableStream<AnyMessage>({
    write: (message) => {
      if (socket.readyState !== socket.OPEN) return
      if (isSlowConsumer(gateway.config, socket.bufferedAmount)) {
        logSlowConsumer(gateway.log, 'WebSocket', { connection_id: connectionId }, socket.bufferedAmount)
        socket.close(1008, 'slow consumer: too many unsent bytes')
        return
      }
      socket.send(JSON.stringify(message))
    },
    close: () => { socket.close(1000) }
  })
  return { readable, writable }
}

export function serveAcpSocket (gateway: Gateway, socket: WebSocket, principal: Principal, options: { agent?: string }): void {
  const connection = gateway.connections.open('ws', principalKey(principal), hasScope(principal, 'approvals:answer'))
  const backend = gatewayBackend(gateway, principal, connection)
  const app = createAcpAgent(backend, {
    ...options,
    version: tollgateVersion(),
    warn: (message) => { gateway.log.warn({ connection_id: connection.id }, message) }
  })
  const acp = app.connect(socketStream(gateway, socket, connection.id))
  const stopExpiry = principal.expiresAt === undefined
    ? () => {}
    : whenExpired(principal.expiresAt, () => { socket.close(1008, 'token expired') })
  socket.on('close', () => {
    stopExpiry()
    acp.close()
    backend.close()
    gateway.connections.close(connection.id)
  })
  socket.on('error', (err) => { gateway.log.debug({ err, connection_id: connection.id }, 'ACP WebSocket error') })
}
