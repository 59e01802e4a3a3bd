/**
 * The socket-level rules of /v1/ws, apart from what frames mean (ws-session.ts): the Origin
 * check, the frame rate limit, the heartbeat, token expiry, the slow-consumer policy, and errors
 * reported as `error` frames with a stable code.
 */
import type { FastifyRequest } from 'fastify'
import type { WebSocket } from 'ws'
import type { ClientFrame } from '../../schemas/ws.js'
import type { Gateway } from '../app/gateway.js'
import { whenExpired } from '../auth/expiry.js'
import { hasScope, principalKey, type Principal } from '../auth/principal.js'
import type { BusEnvelope } from '../bus/bus.js'
import { TollgateError } from '../core/errors.js'
import { FrameRateLimiter } from '../core/security/frame-rate-limit.js'
import { errorFrame, frameRef, parseClientFrame } from './frames.js'
import { isSlowConsumer, logSlowConsumer } from './slow-consumer.js'
import { SocketSession, type Send } from './ws-session.js'

/** onRequest hook: a browser page from a foreign origin may not open a socket with its user's credentials. */
export function checkOrigin (gateway: Gateway): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    if (!gateway.origins.allows(request.headers.origin, request.raw.socket.localPort)) {
      gateway.log.warn({ audit: 'ws_origin_refused', origin: request.headers.origin }, 'refused a WebSocket from a foreign origin')
      throw new TollgateError('ORIGIN_NOT_ALLOWED')
    }
  }
}

export function serveSocket (gateway: Gateway, socket: WebSocket, principal: Principal, encodeEvent: (e: BusEnvelope) => string): void {
  const { config, connections } = gateway
  const connection = connections.open('ws', principalKey(principal), hasScope(principal, 'approvals:answer'))
  let alive = true
  const send: Send = (frame, encoded) => {
    if (socket.readyState !== socket.OPEN) return
    if (isSlowConsumer(config, socket.bufferedAmount)) {
      logSlowConsumer(gateway.log, 'WebSocket', { connection_id: connection.id }, socket.bufferedAmount)
      socket.close(1008, 'slow consumer: too many unsent bytes')
      return
    }
    socket.send(encoded ?? JSON.stringify(frame))
    if (frame.type === 'event') gateway.metrics?.eventSent('ws')
  }
  const session = new SocketSession(gateway, principal, connection, send, encodeEvent)
  connection.follow = (turnId) => {
    try {
      session.followNew(turnId)
    } catch (err) {
      reportError(err, undefined)
    }
  }

  const reportError = (err: unknown, ref: string | undefined): void => {
    if (!(err instanceof TollgateError)) gateway.log.error({ err, connection_id: connection.id }, 'WebSocket frame handler failed')
    send(errorFrame(err instanceof TollgateError ? err : new TollgateError('INTERNAL'), ref))
  }

  const limiter = new FrameRateLimiter({
    perSecond: config.ws.frame_rate.per_second,
    burst: config.ws.frame_rate.burst,
    maxRejected: config.ws.frame_rate.max_rejected
  })
  // A socket outlives the request that authenticated it; it must not outlive the token.
  const stopExpiry = principal.expiresAt === undefined
    ? () => {}
    : whenExpired(principal.expiresAt, () => {
      send(errorFrame(new TollgateError('TOKEN_EXPIRED', 'the bearer token has expired; reconnect with a fresh one'), undefined))
      socket.close(1008, 'token expired')
    })

  socket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
    if (socket.readyState !== socket.OPEN) return
    const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8')
    const verdict = limiter.take()
    if (verdict === 'close') {
      gateway.log.warn({ audit: 'ws_rate_limit_close', connection_id: connection.id, principal: principalKey(principal) }, 'closing a WebSocket that ignores its frame rate limit')
      socket.close(1008, 'frame rate limit exceeded')
      return
    }
    if (verdict === 'reject') {
      reportError(new TollgateError('RATE_LIMITED', `more than ${config.ws.frame_rate.per_second} frames per second; slow down`), frameRef(text))
      return
    }
    let frame: ClientFrame
    try {
      frame = parseClientFrame(text)
    } catch (err) {
      reportError(err, frameRef(text))
      return
    }
    session.handle(frame).catch((err: unknown) => { reportError(err, frame.ref) })
  })
  socket.on('pong', () => { alive = true })
  let heartbeat: NodeJS.Timeout | undefined
  if (config.ws.heartbeat_ms > 0) {
    heartbeat = setInterval(() => {
      if (!alive) {
        socket.terminate()
        return
      }
      alive = false
      socket.ping()
    }, config.ws.heartbeat_ms)
    heartbeat.unref()
  }
  socket.on('close', () => {
    clearInterval(heartbeat)
    stopExpiry()
    session.close()
    connections.close(connection.id)
  })
  socket.on('error', (err) => { gateway.log.debug({ err, connection_id: connection.id }, 'WebSocket error') })
}
