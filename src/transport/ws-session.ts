/**
 * One WebSocket's conversation: its subscriptions (turns and sessions, with replay), the turns
 * it starts and then owns, its approval answers and cancels. Frames arrive parsed and
 * rate-limited (ws-socket.ts); every answer and refusal leaves through `send`.
 */
import type { ClientFrame, ServerFrame } from '../../schemas/ws.js'
import type { Gateway } from '../app/gateway.js'
import { FRAME_SCOPES } from '../auth/frame-scopes.js'
import { principalKey, requireScope, type Principal } from '../auth/principal.js'
import type { BusEnvelope, Unsubscribe } from '../bus/bus.js'
import { TollgateError } from '../core/errors.js'
import type { Connection } from '../service/connections.js'
import { deliverToolResult } from '../service/tool-results.js'
import { followFromStart, followTurn } from './follow.js'
import { encodeOnce } from './encode-once.js'

/** `encoded` is the frame's JSON when a caller already has it (events shared by many sockets). */
export type Send = (frame: ServerFrame, encoded?: string) => void

export class SocketSession {
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

  /**
   * Follows a turn this socket owns from its start, subscribed before the turn's first event is
   * published (see followFromStart): the owner sees turn.started without a replay's round trip.
   */
  followNew (turnId: string): void {
    const key = `turn:${turnId}`
    this.reserve(key)
    this.connection.turns.add(turnId)
    this.subscriptions.set(key, followFromStart({
      bus: this.gateway.bus,
      turnId,
      deliver: (e) => { this.sendEvent(e) },
      onEnd: () => { queueMicrotask(() => { this.unfollow(turnId) }) }
    }))
  }

  /** Ends this socket's follow of a turn (its terminal event was sent, or it never became live). */
  private unfollow (turnId: string): void {
    const key = `turn:${turnId}`
    this.subscriptions.get(key)?.()
    this.subscriptions.delete(key)
    this.connection.turns.delete(turnId)
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
    const done = (): void => { this.unfollow(turnId) }
    const forward = (e: BusEnvelope): void => { this.sendEvent(e) }
    // Replayed events wait until the follow is known to be gap-free: a client must see either
    // `subscribed` and then the events, or only the REPLAY_GAP error, never both.
    let held: BusEnvelope[] | null = []
    const result = await followTurn({
      bus: this.gateway.bus,
      journal: this.gateway.journal,
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
    const unsubscribe = this.gateway.bus.subscribeSession(this.principal.tenant, sessionId, (e) => {
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
          // The person, as REST records it; the surface is the prefix and the audit's `channel`.
          decidedBy: `ws:${principalKey(this.principal)}`,
          channel: 'websocket'
        })
        this.send({ type: 'approval.accepted', ...ref, request_id: frame.request_id, turn_id: turnId, decision: frame.decision })
        return
      }
      case 'tool.result': {
        const delivered = await deliverToolResult(this.gateway.turns, this.principal, frame.turn_id, frame, 'websocket')
        this.send({ type: 'tool.result.accepted', ...ref, ...delivered })
        return
      }
      case 'cancel': {
        const turn = await this.gateway.turns.cancel(this.principal, frame.turn_id, 'cancelled by client')
        this.send({ type: 'cancel.accepted', ...ref, turn_id: turn.turn_id, status: turn.status })
        return
      }
      case 'turn.steer': {
        const accepted = await this.gateway.turns.steer(this.principal, frame.turn_id, frame.message)
        this.send({ type: 'steer.accepted', ...ref, ...accepted })
      }
    }
  }

  close (): void {
    for (const unsubscribe of this.subscriptions.values()) unsubscribe()
    this.subscriptions.clear()
  }
}

/**
 * One event reaches every subscribed socket as the same envelope object: encode it once, not
 * once per socket (1,000 subscribers would otherwise serialise it 1,000 times; encode-once.ts).
 */
export function createEventEncoder (): (e: BusEnvelope) => string {
  return encodeOnce((e) => JSON.stringify({ type: 'event', turn_id: e.turn_id, seq: e.seq, ts: e.ts, event: e.event }))
}
