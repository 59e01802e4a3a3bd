/**
 * WebSocket /v1/ws: one socket multiplexes many turns. It subscribes (with replay), starts turns
 * it then owns, answers approvals and cancels. Closing the socket cancels the turns it owns
 * unless they were started with detach:true.
 */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { ServerFrame } from '../schemas/ws.js'
import { whenExpired } from '../src/auth/expiry.js'
import { FRAME_SCOPES } from '../src/auth/frame-scopes.js'
import { authenticate, offeredProtocols, principalOf, WS_PROTOCOL } from '../src/auth/http.js'
import { hasScope, principalKey, requireScope, type Principal } from '../src/auth/principal.js'
import type { BusEnvelope, Unsubscribe } from '../src/bus/bus.js'
import { TollgateError } from '../src/core/errors.js'
import type { Connection } from '../src/service/connections.js'
import { followTurn } from '../src/transport/follow.js'
import { frameRef, parseClientFrame } from '../src/transport/frames.js'
import { FrameRateLimiter } from '../src/core/security/frame-rate-limit.js'
import type { Gateway } from '../src/app/gateway.js'
import type { ClientFrame } from '../schemas/ws.js'

/** `encoded` is the frame's JSON when a caller already has it (events shared by many sockets). */
type Send = (frame: ServerFrame, encoded?: string) => void

class SocketSession {
  private readonly subscriptions = new Map<string, Unsubscribe>()
  /** Turns with a follow being set up, counted (two subscribes may race). */
  private readonly claims = new Map<string, number>()

  constructor (
    private readonly gateway: Gateway,
    private readonly principal: Principal,
    private readonly connection: Connection,
    readonly send: Send,
    private readonly encodeEvent: (e: BusEnvelope) => string
  ) {}

  private sendEvent (e: BusEnvelope): void {
    this.send({ type: 'event', turn_id: e.turn_id, seq: e.seq, ts: e.ts, event: e.event }, this.encodeEvent(e))
  }

  private key (frame: { turn_id?: string, session_id?: string }): string {
    if (frame.turn_id !== undefined && frame.session_id !== undefined) throw new TollgateError('INVALID_FRAME', 'give turn_id or session_id, not both')
    if (frame.turn_id !== undefined) return `turn:${frame.turn_id}`
    if (frame.session_id !== undefined) return `session:${frame.session_id}`
    throw new TollgateError('INVALID_FRAME', 'turn_id or session_id is required')
  }

  private reserve (key: string): void {
    this.subscriptions.get(key)?.()
    this.subscriptions.delete(key)
    if (this.subscriptions.size >= this.gateway.config.ws.max_subscriptions) {
      throw new TollgateError('TOO_MANY_SUBSCRIPTIONS', `at most ${this.gateway.config.ws.max_subscriptions} subscriptions per socket`)
    }
  }

  /** A turn this socket follows by itself reaches it through that follow only. */
  private followsTurn (turnId: string): boolean {
    return this.subscriptions.has(`turn:${turnId}`) || this.claims.has(turnId)
  }

  async followTurn (turnId: string, afterSeq: number, ref: string | undefined, ack: boolean): Promise<void> {
    // Claimed before the first await: while the follow is being set up, events of this turn must
    // not also arrive through a session subscription (the follow's replay delivers them), or the
    // socket would see them twice.
    this.claims.set(turnId, (this.claims.get(turnId) ?? 0) + 1)
    try {
      await this.startFollow(turnId, afterSeq, ref, ack)
    } finally {
      const left = (this.claims.get(turnId) ?? 1) - 1
      if (left === 0) this.claims.delete(turnId)
      else this.claims.set(turnId, left)
    }
  }

  private async startFollow (turnId: string, afterSeq: number, ref: string | undefined, ack: boolean): Promise<void> {
    const key = `turn:${turnId}`
    const turn = await this.gateway.turns.get(this.principal, turnId)
    this.reserve(key)
    // Placeholder until the follow is live, so a racing unsubscribe or close still cleans up.
    this.subscriptions.set(key, () => {})
    this.connection.turns.add(turnId)
    const done = (): void => {
      this.subscriptions.get(key)?.()
      this.subscriptions.delete(key)
      this.connection.turns.delete(turnId)
    }
    const forward = (e: BusEnvelope): void => { this.sendEvent(e) }
    // Replayed events wait until the follow is known to be gap-free: a client must see either
    // `subscribed` and then the events, or only the REPLAY_GAP error, never both.
    let held: BusEnvelope[] | null = []
    const result = await followTurn({
      bus: this.gateway.bus,
      turnId,
      afterSeq,
      knownLastSeq: turn.last_seq,
      deliver: (e) => { if (held === null) forward(e); else held.push(e) },
      onEnd: () => { queueMicrotask(done) }
    })
    if (result.kind === 'gap') {
      done()
      throw new TollgateError('REPLAY_GAP', `events after seq ${afterSeq} are no longer retained (oldest kept: ${result.firstSeq}); refetch the turn`)
    }
    if (ack) this.send({ type: 'subscribed', ...(ref === undefined ? {} : { ref }), turn_id: turnId, status: turn.status, last_seq: turn.last_seq })
    const replayed = held
    held = null
    for (const e of replayed) forward(e)
    if (!this.subscriptions.has(key) || this.connection.closed) {
      result.unsubscribe()
      return
    }
    this.subscriptions.set(key, result.unsubscribe)
  }

  private async subscribe (frame: ClientFrame & { type: 'subscribe' }): Promise<void> {
    const key = this.key(frame)
    if (frame.turn_id !== undefined) {
      await this.followTurn(frame.turn_id, frame.after_seq ?? 0, frame.ref, true)
      return
    }
    const sessionId = frame.session_id as string
    await this.gateway.turns.session(this.principal, sessionId)
    this.reserve(key)
    this.connection.sessions.add(sessionId)
    const unsubscribe = this.gateway.bus.subscribeSession(sessionId, (e) => {
      if (this.followsTurn(e.turn_id)) return
      this.sendEvent(e)
    })
    this.subscriptions.set(key, () => {
      unsubscribe()
      this.connection.sessions.delete(sessionId)
    })
    this.send({ type: 'subscribed', ...(frame.ref === undefined ? {} : { ref: frame.ref }), session_id: sessionId })
  }

  async handle (frame: ClientFrame): Promise<void> {
    const ref = frame.ref === undefined ? {} : { ref: frame.ref }
    const scope = FRAME_SCOPES[frame.type]
    if (scope !== null) requireScope(this.principal, scope)
    switch (frame.type) {
      case 'hello':
        this.send({ type: 'welcome', ...ref, connection_id: this.connection.id, heartbeat_ms: this.gateway.config.ws.heartbeat_ms })
        return
      case 'ping':
        this.send({ type: 'pong', ...ref })
        return
      case 'subscribe':
        await this.subscribe(frame)
        return
      case 'unsubscribe': {
        const key = this.key(frame)
        this.subscriptions.get(key)?.()
        this.subscriptions.delete(key)
        if (frame.turn_id !== undefined) this.connection.turns.delete(frame.turn_id)
        this.send({ type: 'unsubscribed', ...ref, ...(frame.turn_id === undefined ? {} : { turn_id: frame.turn_id }), ...(frame.session_id === undefined ? {} : { session_id: frame.session_id }) })
        return
      }
      case 'turn.start': {
        const { type: _t, ref: _r, ...body } = frame
        if (body.owner_connection !== undefined && body.owner_connection !== this.connection.id) {
          throw new TollgateError('INVALID_FRAME', 'turn.start makes this socket the owner; owner_connection must be omitted or equal its connection_id')
        }
        const { turn } = await this.gateway.turns.start(this.principal, { ...body, owner_connection: this.connection.id }, { ownerConnection: this.connection.id, channel: 'websocket' })
        this.send({ type: 'turn.accepted', ...ref, turn_id: turn.turn_id, session_id: turn.session_id, status: turn.status })
        return
      }
      case 'approval.respond': {
        const { turnId } = await this.gateway.turns.answerApproval(this.principal, frame.request_id, {
          decision: frame.decision,
          ...(frame.replacement === undefined ? {} : { replacement: frame.replacement }),
          decidedBy: `ws:${this.connection.id}`,
          channel: 'websocket'
        })
        this.send({ type: 'approval.accepted', ...ref, request_id: frame.request_id, turn_id: turnId, decision: frame.decision })
        return
      }
      case 'cancel': {
        const turn = await this.gateway.turns.cancel(this.principal, frame.turn_id, 'cancelled by client')
        this.send({ type: 'cancel.accepted', ...ref, turn_id: turn.turn_id, status: turn.status })
      }
    }
  }

  close (): void {
    for (const unsubscribe of this.subscriptions.values()) unsubscribe()
    this.subscriptions.clear()
  }
}

export default async function wsRoutes (app: FastifyInstance): Promise<void> {
  const gateway = app.gateway
  const { config, connections } = gateway
  // One event reaches every subscribed socket as the same envelope object: encode it once, not
  // once per socket (1,000 subscribers would otherwise serialise it 1,000 times).
  const encoded = new WeakMap<BusEnvelope, string>()
  const encodeEvent = (e: BusEnvelope): string => {
    let text = encoded.get(e)
    if (text === undefined) {
      text = JSON.stringify({ type: 'event', turn_id: e.turn_id, seq: e.seq, ts: e.ts, event: e.event })
      encoded.set(e, text)
    }
    return text
  }

  app.get('/v1/ws', {
    onRequest: [
      async (request) => {
        if (!gateway.origins.allows(request.headers.origin, request.raw.socket.localPort)) {
          gateway.log.warn({ audit: 'ws_origin_refused', origin: request.headers.origin }, 'refused a WebSocket from a foreign origin')
          throw new TollgateError('ORIGIN_NOT_ALLOWED', 'this Origin may not open a WebSocket here')
        }
      },
      authenticate(gateway.auth, null, { upgrade: true, allowQueryToken: config.auth.allow_query_token }),
      async (request) => {
        // A client that does not name the protocol may not speak it; refusing keeps every socket on
        // a contract both sides agreed to (and the version in the name) instead of guessing. A plain
        // GET is no upgrade at all: it gets 426 UPGRADE_REQUIRED from the preHandler instead.
        if (request.ws && !offeredProtocols(request).includes(WS_PROTOCOL)) {
          throw new TollgateError('SUBPROTOCOL_REQUIRED', `offer the ${WS_PROTOCOL} WebSocket subprotocol (Sec-WebSocket-Protocol)`)
        }
      }
    ],
    schema: {
      summary: 'WebSocket: turns, events, approvals, cancellation (frames in asyncapi.yaml)',
      querystring: Type.Object({
        access_token: Type.Optional(Type.String({
          maxLength: 65_536,
          description: 'Least-preferred way to send the token, only with auth.allow_query_token = true; prefer the bearer.<token> subprotocol'
        }))
      })
    },
    websocket: true
  }, (socket, request) => {
    const principal = principalOf(request)
    const connection = connections.open('ws', principalKey(principal), hasScope(principal, 'approvals:answer'))
    let alive = true
    const send: Send = (frame, encoded) => {
      if (socket.readyState !== socket.OPEN) return
      if (socket.bufferedAmount > config.ws.max_buffered_bytes) {
        gateway.log.warn({ connection_id: connection.id, buffered: socket.bufferedAmount }, 'closing a slow WebSocket consumer')
        socket.close(1008, 'slow consumer: too many unsent bytes')
        return
      }
      socket.send(encoded ?? JSON.stringify(frame))
      if (frame.type === 'event') gateway.metrics?.eventSent('ws')
    }
    const session = new SocketSession(gateway, principal, connection, send, encodeEvent)
    connection.follow = (turnId) => {
      session.followTurn(turnId, 0, undefined, false).catch((err: unknown) => { reportError(err, undefined) })
    }

    const reportError = (err: unknown, ref: string | undefined): void => {
      if (err instanceof TollgateError) {
        send({ type: 'error', code: err.code, message: err.detail === undefined ? err.message : `${err.message}: ${err.detail}`, ...(ref === undefined ? {} : { ref }) })
        return
      }
      gateway.log.error({ err, connection_id: connection.id }, 'WebSocket frame handler failed')
      send({ type: 'error', code: 'INTERNAL', message: 'internal error', ...(ref === undefined ? {} : { ref }) })
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
        send({ type: 'error', code: 'TOKEN_EXPIRED', message: 'the bearer token has expired; reconnect with a fresh one' })
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
  })
}
