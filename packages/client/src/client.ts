/**
 * Tollgate client: one WebSocket to /v1/ws that starts turns, follows their events, answers
 * approvals and cancels, plus the few HTTP reads a client needs. When the socket drops it
 * reconnects with backoff and re-subscribes every unfinished turn with after_seq = the last seq
 * it accepted, so each turn's stream sees every event exactly once and in order.
 *
 * Platform-neutral: WebSocket and fetch are injected (browser globals by default; `./node.js`
 * wires the `ws` package), and nothing here touches Node or DOM APIs.
 */
import { TollgateClientError } from './errors.js'
import { TurnStream } from './stream.js'
import { queryString, type ListQuery } from './listing.js'
import {
  BEARER_PROTOCOL_PREFIX, WS_OPEN, WS_PROTOCOL,
  type ApprovalAnswerResult, type ApprovalsPage, type ClientFrame, type EventEnvelope, type EventsPage, type FetchLike,
  type OperatorDecision, type ServerFrame,
  type ServerFrameOf, type SessionsPage, type Turn, type TurnRequest, type TurnStatus, type TurnsPage, type WebSocketFactory,
  type WebSocketLike
} from './types.js'

export interface ReconnectPolicy {
  initialDelayMs: number
  maxDelayMs: number
  /** Consecutive failed connection attempts before the client gives up and closes. */
  maxAttempts: number
}

export const DEFAULT_RECONNECT: ReconnectPolicy = { initialDelayMs: 250, maxDelayMs: 5000, maxAttempts: 20 }

export type ConnectionState = 'idle' | 'connecting' | 'open' | 'reconnecting' | 'closed'

export type ClientNotice =
  | { type: 'state', state: ConnectionState, attempt: number, closeCode?: number, closeReason?: string }
  /** A turn was (re)subscribed: the server had `serverLastSeq` events, the client had `afterSeq`. */
  | { type: 'subscribed', turnId: string, afterSeq: number, serverLastSeq: number, resumed: boolean }
  /** An error frame that answers no request of this client, or a stream that could not resume. */
  | { type: 'error', error: TollgateClientError, turnId?: string }

export interface ClientOptions {
  /** Gateway base URL, e.g. http://127.0.0.1:8080 (the page uses its own origin). */
  url: string
  /** Bearer token: sent as the `bearer.<token>` WebSocket subprotocol and the HTTP Authorization header. */
  token?: string | undefined
  WebSocket?: WebSocketFactory
  fetch?: FetchLike
  reconnect?: Partial<ReconnectPolicy>
  /** How long a frame waits for its answer. */
  requestTimeoutMs?: number
  /** Sent in `hello`, shows up in gateway logs. */
  clientName?: string
  /** Jitter source, injectable for tests. */
  random?: () => number
}

/** RFC 7230 token characters: what a WebSocket subprotocol entry may contain. */
const TOKEN_CHARS = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

const CANCEL_TIMEOUT_MS = 60_000

type Timer = ReturnType<typeof setTimeout>
type Interval = ReturnType<typeof setInterval>

interface Pending {
  resolve: (frame: ServerFrame) => void
  reject: (err: TollgateClientError) => void
  timer: Timer
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never
type OutgoingFrame = DistributiveOmit<ClientFrame, 'ref'>

export function checkToken (token: string | undefined): string | undefined {
  if (token === undefined || token === '') return undefined
  if (!TOKEN_CHARS.test(token)) throw new TollgateClientError('INVALID_TOKEN', 'the token contains characters a WebSocket subprotocol cannot carry')
  return token
}

export class TollgateClient {
  readonly url: string
  private token: string | undefined
  private readonly WebSocketImpl: WebSocketFactory
  private readonly fetchImpl: FetchLike
  private readonly policy: ReconnectPolicy
  private readonly requestTimeoutMs: number
  private readonly clientName: string
  private readonly random: () => number

  private socket: WebSocketLike | null = null
  private stateValue: ConnectionState = 'idle'
  private connection: string | null = null
  private attempt = 0
  private closedByUser = false
  private refs = 0
  private lastFrameAt = 0
  private reconnectTimer: Timer | null = null
  private heartbeat: Interval | null = null
  private readonly pending = new Map<string, Pending>()
  private readonly streams = new Map<string, TurnStream>()
  /** Connection id on which each turn is currently followed. */
  private readonly followedOn = new Map<string, string>()
  private readonly resyncing = new Set<string>()
  /** Turns followed on some earlier socket: their next subscribe is a resume. */
  private readonly followedBefore = new Set<string>()
  private openWaiters: Array<{ resolve: () => void, reject: (err: TollgateClientError) => void }> = []
  private readonly listeners = new Set<(notice: ClientNotice) => void>()

  constructor (options: ClientOptions) {
    this.url = options.url.replace(/\/+$/, '')
    this.token = checkToken(options.token)
    const ws = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketFactory }).WebSocket
    // A browser's fetch must be called on window: unbound it throws "Illegal invocation".
    const fetchImpl = options.fetch ?? (globalThis as { fetch?: FetchLike }).fetch?.bind(globalThis)
    if (ws === undefined) throw new TollgateClientError('PROTOCOL', 'no WebSocket implementation: pass options.WebSocket')
    if (fetchImpl === undefined) throw new TollgateClientError('PROTOCOL', 'no fetch implementation: pass options.fetch')
    this.WebSocketImpl = ws
    this.fetchImpl = fetchImpl
    this.policy = { ...DEFAULT_RECONNECT, ...options.reconnect }
    this.requestTimeoutMs = options.requestTimeoutMs ?? 15_000
    this.clientName = options.clientName ?? 'tollgate-client'
    this.random = options.random ?? Math.random
  }

  get state (): ConnectionState {
    return this.stateValue
  }

  /** The gateway's id for the current socket (what `owner_connection` would name). */
  get connectionId (): string | null {
    return this.connection
  }

  get wsUrl (): string {
    return `${this.url.replace(/^http/, 'ws')}/v1/ws`
  }

  on (listener: (notice: ClientNotice) => void): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  /** Opens the socket if needed; resolves once the gateway said `welcome`. */
  async connect (): Promise<void> {
    if (this.stateValue === 'open') return
    if (this.stateValue === 'closed') throw new TollgateClientError('CLOSED', 'the client is closed')
    const opened = new Promise<void>((resolve, reject) => { this.openWaiters.push({ resolve, reject }) })
    if (this.stateValue === 'idle') this.openSocket()
    await opened
  }

  /** Uses another token from now on: the socket reconnects with it and resumes every turn. */
  setToken (token: string | undefined): void {
    this.token = checkToken(token)
    if (this.closedByUser) return
    if (this.socket !== null) {
      this.dropSocket(this.socket, 4000, 'token changed', true)
      return
    }
    // Waiting to retry, or given up (a refused token looks like any failed upgrade): try now.
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer)
    this.reconnectTimer = null
    this.attempt = 0
    if (this.stateValue === 'idle') return
    if (this.stateValue === 'closed') this.setState('reconnecting')
    this.openSocket()
  }

  /** Starts a turn owned by this socket; its events are followed from seq 1. */
  async startTurn (body: TurnRequest): Promise<TurnStream> {
    const ack = await this.request({ type: 'turn.start', ...body }) as ServerFrameOf<'turn.accepted'>
    const stream = this.streamOf(ack.turn_id, 0)
    stream.sessionId = ack.session_id
    // The gateway follows a turn for the socket that started it; no subscribe frame is needed.
    if (this.connection !== null) this.followedOn.set(ack.turn_id, this.connection)
    this.followedBefore.add(ack.turn_id)
    return stream
  }

  /** Follows a turn (another tab's, or one started over HTTP) from after `afterSeq`. */
  subscribe (turnId: string, options: { afterSeq?: number } = {}): TurnStream {
    const stream = this.streamOf(turnId, options.afterSeq ?? 0)
    if (this.stateValue === 'open') this.follow(stream)
    else this.connect().catch(() => {})
    return stream
  }

  /** Stops following a turn; its stream keeps what it already holds. */
  unsubscribe (turnId: string): void {
    this.streams.delete(turnId)
    this.followedOn.delete(turnId)
    this.followedBefore.delete(turnId)
    if (this.stateValue === 'open') this.request({ type: 'unsubscribe', turn_id: turnId }).catch(() => {})
  }

  stream (turnId: string): TurnStream | undefined {
    return this.streams.get(turnId)
  }

  async respond (requestId: string, decision: OperatorDecision, replacement?: string): Promise<ServerFrameOf<'approval.accepted'>> {
    if (decision === 'edit' && replacement === undefined) throw new TollgateClientError('INVALID_DECISION', 'edit needs a replacement text')
    return await this.request({
      type: 'approval.respond', request_id: requestId, decision, ...(replacement === undefined ? {} : { replacement })
    }) as ServerFrameOf<'approval.accepted'>
  }

  /** Cancels a turn; the gateway answers once the turn has recorded its terminal event. */
  async cancel (turnId: string): Promise<ServerFrameOf<'cancel.accepted'>> {
    return await this.request({ type: 'cancel', turn_id: turnId }, CANCEL_TIMEOUT_MS) as ServerFrameOf<'cancel.accepted'>
  }

  /**
   * Steers a running turn: the message joins its history before its next model call (and shows up
   * in its stream as a `user.message` event). Refused with `STEERING_CLOSED` once the turn ends.
   */
  async steer (turnId: string, message: string): Promise<ServerFrameOf<'steer.accepted'>> {
    return await this.request({ type: 'turn.steer', turn_id: turnId, message }) as ServerFrameOf<'steer.accepted'>
  }

  async getTurn (turnId: string): Promise<Turn> {
    return await this.http('GET', `/v1/turns/${encodeURIComponent(turnId)}`) as Turn
  }

  async turnEvents (turnId: string, afterSeq = 0): Promise<EventsPage> {
    return await this.http('GET', `/v1/turns/${encodeURIComponent(turnId)}/events?after_seq=${afterSeq}`) as EventsPage
  }

  /** The principal's sessions, most recently updated first. */
  async listSessions (query: ListQuery = {}): Promise<SessionsPage> {
    return await this.http('GET', `/v1/sessions${queryString({ limit: query.limit, cursor: query.cursor })}`) as SessionsPage
  }

  /** The principal's turns, newest first; narrowed to one session and/or one status. */
  async listTurns (query: ListQuery & { sessionId?: string, status?: TurnStatus } = {}): Promise<TurnsPage> {
    const qs = queryString({ session_id: query.sessionId, status: query.status, limit: query.limit, cursor: query.cursor })
    return await this.http('GET', `/v1/turns${qs}`) as TurnsPage
  }

  /** The principal's approval requests still waiting for an answer, newest first. */
  async listPendingApprovals (query: ListQuery & { sessionId?: string, turnId?: string } = {}): Promise<ApprovalsPage> {
    const qs = queryString({
      status: 'pending', session_id: query.sessionId, turn_id: query.turnId, limit: query.limit, cursor: query.cursor
    })
    return await this.http('GET', `/v1/approvals${qs}`) as ApprovalsPage
  }

  /** Answers an approval over HTTP (`POST /v1/approvals/:id`): needs no socket and no subscription. */
  async answerApproval (requestId: string, decision: OperatorDecision, replacement?: string): Promise<ApprovalAnswerResult> {
    if (decision === 'edit' && replacement === undefined) throw new TollgateClientError('INVALID_DECISION', 'edit needs a replacement text')
    return await this.http('POST', `/v1/approvals/${encodeURIComponent(requestId)}`, {
      decision, ...(replacement === undefined ? {} : { replacement })
    }) as ApprovalAnswerResult
  }

  close (): void {
    if (this.stateValue === 'closed') return
    this.closedByUser = true
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer)
    this.reconnectTimer = null
    const socket = this.socket
    if (socket !== null) {
      this.detach(socket)
      try { socket.close(1000, 'client closed') } catch {}
    }
    this.socket = null
    this.stopHeartbeat()
    this.rejectPending(new TollgateClientError('CLOSED', 'the client is closed'))
    const closed = new TollgateClientError('CLOSED', 'the client is closed')
    for (const w of this.openWaiters.splice(0)) w.reject(closed)
    for (const stream of this.streams.values()) stream.fail(closed)
    this.setState('closed')
  }

  /** Sends a frame with a fresh ref once the socket is open; resolves with its direct answer. */
  async request (frame: OutgoingFrame, timeoutMs = this.requestTimeoutMs): Promise<ServerFrame> {
    await this.connect()
    return await this.send(frame, timeoutMs)
  }

  private async http (method: string, path: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json' }
    if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await this.fetchImpl(`${this.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const text = await res.text()
    let parsed: unknown = null
    try {
      parsed = text === '' ? null : JSON.parse(text)
    } catch {
      throw new TollgateClientError('PROTOCOL', `${method} ${path} answered ${res.status} with a body that is not JSON`, res.status)
    }
    if (!res.ok) {
      const problem = parsed as { code?: unknown, detail?: unknown, title?: unknown } | null
      const code = typeof problem?.code === 'string' ? problem.code : `HTTP_${res.status}`
      const message = typeof problem?.detail === 'string' ? problem.detail : typeof problem?.title === 'string' ? problem.title : `${method} ${path} failed`
      throw new TollgateClientError(code, message, res.status)
    }
    return parsed
  }

  private streamOf (turnId: string, afterSeq: number): TurnStream {
    let stream = this.streams.get(turnId)
    if (stream === undefined) {
      stream = new TurnStream(turnId, afterSeq)
      this.streams.set(turnId, stream)
    }
    return stream
  }

  private emit (notice: ClientNotice): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(notice)
      } catch {
        // A listener's bug must not break event delivery to the others.
      }
    }
  }

  private setState (state: ConnectionState, close?: { code: number, reason: string }): void {
    this.stateValue = state
    this.emit({ type: 'state', state, attempt: this.attempt, ...(close === undefined ? {} : { closeCode: close.code, closeReason: close.reason }) })
  }

  private openSocket (): void {
    this.reconnectTimer = null
    // A retry already announced itself as `reconnecting` (with its attempt number) when scheduled.
    if (this.stateValue === 'idle') this.setState('connecting')
    const protocols = this.token === undefined ? [WS_PROTOCOL] : [WS_PROTOCOL, `${BEARER_PROTOCOL_PREFIX}${this.token}`]
    let socket: WebSocketLike
    try {
      socket = new this.WebSocketImpl(this.wsUrl, protocols)
    } catch (err) {
      this.scheduleReconnect({ code: 1006, reason: err instanceof Error ? err.message : 'cannot open a WebSocket' })
      return
    }
    this.socket = socket
    socket.onopen = () => {
      this.lastFrameAt = Date.now()
      this.send({ type: 'hello', client: this.clientName })
        .then((frame) => { if (this.socket === socket) this.welcomed(frame as ServerFrameOf<'welcome'>) })
        .catch(() => {})
    }
    socket.onmessage = (event) => { if (this.socket === socket) this.receive(event.data) }
    socket.onclose = (event) => { this.socketGone(socket, event.code, event.reason) }
    socket.onerror = () => {}
  }

  private welcomed (welcome: ServerFrameOf<'welcome'>): void {
    this.connection = welcome.connection_id
    this.attempt = 0
    this.setState('open')
    this.startHeartbeat(welcome.heartbeat_ms)
    for (const stream of this.streams.values()) if (stream.live) this.follow(stream)
    for (const w of this.openWaiters.splice(0)) w.resolve()
  }

  /** (Re)subscribes a turn on the current socket after the last seq its stream accepted. */
  private follow (stream: TurnStream): void {
    const connection = this.connection
    if (connection === null || this.followedOn.get(stream.turnId) === connection) return
    this.followedOn.set(stream.turnId, connection)
    this.resubscribe(stream, connection)
  }

  private resubscribe (stream: TurnStream, connection: string): void {
    const afterSeq = stream.lastSeq
    const resumed = this.followedBefore.has(stream.turnId)
    this.followedBefore.add(stream.turnId)
    this.send({ type: 'subscribe', turn_id: stream.turnId, after_seq: afterSeq })
      .then((frame) => {
        this.resyncing.delete(stream.turnId)
        const ack = frame as ServerFrameOf<'subscribed'>
        this.emit({ type: 'subscribed', turnId: stream.turnId, afterSeq, serverLastSeq: ack.last_seq ?? 0, resumed })
      })
      .catch((err: TollgateClientError) => {
        this.resyncing.delete(stream.turnId)
        // A dropped socket is retried on the next welcome; anything else (REPLAY_GAP, TURN_NOT_FOUND) is final.
        if (err.code === 'DISCONNECTED' || err.code === 'CLOSED') {
          if (this.followedOn.get(stream.turnId) === connection) this.followedOn.delete(stream.turnId)
          return
        }
        stream.fail(err)
        this.emit({ type: 'error', error: err, turnId: stream.turnId })
      })
  }

  private receive (data: unknown): void {
    this.lastFrameAt = Date.now()
    let frame: ServerFrame
    try {
      frame = JSON.parse(typeof data === 'string' ? data : String(data)) as ServerFrame
    } catch {
      this.emit({ type: 'error', error: new TollgateClientError('PROTOCOL', 'the gateway sent a frame that is not JSON') })
      return
    }
    if (frame.type === 'event') {
      this.receiveEvent(frame)
      return
    }
    const ref = frame.ref
    const pending = ref === undefined ? undefined : this.pending.get(ref)
    if (pending !== undefined && ref !== undefined) {
      this.pending.delete(ref)
      clearTimeout(pending.timer)
      if (frame.type === 'error') pending.reject(new TollgateClientError(frame.code, frame.message))
      else pending.resolve(frame)
      return
    }
    if (frame.type === 'error') this.emit({ type: 'error', error: new TollgateClientError(frame.code, frame.message) })
  }

  private receiveEvent (frame: ServerFrameOf<'event'>): void {
    const stream = this.streamOf(frame.turn_id, 0)
    const envelope: EventEnvelope = { turn_id: frame.turn_id, seq: frame.seq, ts: frame.ts, event: frame.event }
    if (envelope.event.kind === 'turn.started' && stream.sessionId === undefined) stream.sessionId = envelope.event.session_id
    const result = stream.offer(envelope)
    if (result !== 'gap' || this.resyncing.has(stream.turnId) || this.connection === null) return
    // A hole in the sequence: ask again from the last accepted seq; the replay fills it in order.
    this.resyncing.add(stream.turnId)
    this.followedOn.set(stream.turnId, this.connection)
    this.resubscribe(stream, this.connection)
  }

  private send (frame: OutgoingFrame, timeoutMs = this.requestTimeoutMs): Promise<ServerFrame> {
    const socket = this.socket
    if (socket === null || socket.readyState !== WS_OPEN) {
      return Promise.reject(new TollgateClientError('DISCONNECTED', 'the socket is not connected'))
    }
    this.refs += 1
    const ref = `c${this.refs}`
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(ref)
        reject(new TollgateClientError('TIMEOUT', `no answer to ${frame.type} within ${timeoutMs} ms`))
      }, timeoutMs)
      this.pending.set(ref, { resolve, reject, timer })
      socket.send(JSON.stringify({ ...frame, ref }))
    })
  }

  private rejectPending (error: TollgateClientError): void {
    for (const [ref, p] of this.pending) {
      clearTimeout(p.timer)
      this.pending.delete(ref)
      p.reject(error)
    }
  }

  private detach (socket: WebSocketLike): void {
    socket.onopen = null
    socket.onmessage = null
    socket.onclose = null
    // Kept as a no-op, not removed: `ws` throws an 'error' with no listener, e.g. when a socket
    // still connecting is closed.
    socket.onerror = () => {}
  }

  /**
   * Forgets a socket without waiting for its close event: a half-open TCP connection may not
   * report closing for minutes, and the client must resume long before that.
   */
  private dropSocket (socket: WebSocketLike, code: number, reason: string, immediate = false): void {
    try { socket.close(code, reason) } catch {}
    this.socketGone(socket, code, reason, immediate)
  }

  private socketGone (socket: WebSocketLike, code: number, reason: string, immediate = false): void {
    if (this.socket !== socket) return
    this.detach(socket)
    this.socket = null
    this.connection = null
    this.followedOn.clear()
    this.resyncing.clear()
    this.stopHeartbeat()
    this.rejectPending(new TollgateClientError('DISCONNECTED', `the socket closed (${code}${reason === '' ? '' : ` ${reason}`})`))
    if (this.closedByUser) return
    this.scheduleReconnect({ code, reason }, immediate)
  }

  private scheduleReconnect (close: { code: number, reason: string }, immediate = false): void {
    if (!immediate) this.attempt += 1
    if (this.attempt > this.policy.maxAttempts) {
      const error = new TollgateClientError('CONNECT_FAILED', `gave up after ${this.policy.maxAttempts} failed connection attempts (last close ${close.code})`)
      for (const w of this.openWaiters.splice(0)) w.reject(error)
      for (const stream of this.streams.values()) stream.fail(error)
      this.setState('closed', close)
      return
    }
    const base = Math.min(this.policy.maxDelayMs, this.policy.initialDelayMs * 2 ** Math.max(0, this.attempt - 1))
    // Jitter in [base/2, base): many clients of a restarted gateway do not come back in lockstep.
    const delay = immediate ? 0 : Math.round(base / 2 + (this.random() * base) / 2)
    this.setState('reconnecting', close)
    this.reconnectTimer = setTimeout(() => { this.openSocket() }, delay)
  }

  private startHeartbeat (heartbeatMs: number): void {
    this.stopHeartbeat()
    if (heartbeatMs <= 0) return
    // Browsers hide protocol-level pings, so the client pings with frames and watches for silence.
    this.heartbeat = setInterval(() => {
      const socket = this.socket
      if (socket === null) return
      if (Date.now() - this.lastFrameAt > 2 * heartbeatMs) {
        this.dropSocket(socket, 4001, 'heartbeat timeout')
        return
      }
      this.send({ type: 'ping' }, heartbeatMs).catch(() => {})
    }, heartbeatMs)
  }

  private stopHeartbeat (): void {
    if (this.heartbeat !== null) clearInterval(this.heartbeat)
    this.heartbeat = null
  }
}
