/**
 * Turn service: starts turns, owns their cancellation tokens, sequences their events onto the
 * bus, persists their records and session history, and answers ownership-checked queries.
 * Routes (HTTP, SSE, WebSocket) are thin adapters over this one object.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { TurnEvent } from '../../schemas/events.js'
import type { TurnRequest } from '../../schemas/turn.js'
import type { Config } from '../config.js'
import { ApprovalBroker, type OperatorAnswer } from '../approval/broker.js'
import { SessionGrants } from '../approval/grants.js'
import { principalKey, type Principal } from '../auth/principal.js'
import type { BusEnvelope, ControlRequest, EventBus, ReplayResult } from '../bus/bus.js'
import { ControlRpc, remoteError, type ReplyBody } from '../cluster/control.js'
import type { TurnSlots } from '../cluster/turn-slots.js'
import { TollgateError } from '../errors.js'
import { canonicalJson } from '../json/canonical.js'
import type { McpToolSource } from '../mcp/manager.js'
import type { Observer } from '../observe/observer.js'
import type { ModelProvider } from '../providers/types.js'
import { scrubText } from '../security/redact.js'
import type { ReceiptKeyring } from '../receipts/keyring.js'
import type { ReceiptKey } from '../receipts/receipts.js'
import type { IdempotencyClaim, IdempotencyRecord, SessionRecord, Store, TurnRecord } from '../store/store.js'
import type { WorkspaceLayout } from '../tools/builtin/workspace-layout.js'
import type { ToolCatalog } from '../tools/registry.js'
import { freshLoopBookkeeping, resolveAgent, resolveTurnContext, type TurnState } from '../turn/context.js'
import type { ToolHooks } from '../turn/hooks.js'
import { trimHistory } from '../turn/history.js'
import { CancelReason, runToolLoop, type TurnOutcome } from '../turn/loop.js'
import type { ConnectionRegistry } from './connections.js'
import { RetentionQueue } from './retention.js'

export interface TurnServiceDeps {
  config: Config
  catalog: ToolCatalog
  workspaces: WorkspaceLayout
  providers: ReadonlyMap<string, ModelProvider>
  observer: Observer
  hooks: ToolHooks
  store: Store
  bus: EventBus
  connections: ConnectionRegistry
  log: Logger
  mcp?: McpToolSource
  /** This gateway instance, as named on the bus's control plane. */
  instanceId: string
  /** Master keys the turns' receipt keys are derived from. */
  receipts: ReceiptKeyring
  /** Per-principal turn slots shared with the other instances (Redis bus); null: this instance's count alone. */
  slots: TurnSlots | null
}

export interface StartOptions {
  /** Connection whose closing cancels the turn (unless detached) and which answers approvals. */
  ownerConnection: string | null
  /** Transport label for audit and observer records. */
  channel: string
}

interface ActiveTurn {
  record: TurnRecord
  controller: AbortController
  seq: number
  ownerConnection: string | null
  detach: boolean
  done: Promise<TurnRecord>
  disposers: Array<() => void>
}

class TurnTimeout extends CancelReason {}

/** How long a refused start with an idempotency key looks for a racing original's claim: 10 × 50 ms. */
const RACE_POLLS = 10
const RACE_POLL_MS = 50

const TERMINAL_STATUS = new Set(['completed', 'cancelled', 'failed', 'interrupted'])

export class TurnService {
  readonly broker = new ApprovalBroker()
  private readonly deps: TurnServiceDeps
  private readonly active = new Map<string, ActiveTurn>()
  private readonly busySessions = new Map<string, string>()
  private readonly timers = new Set<NodeJS.Timeout>()
  private readonly retention: RetentionQueue
  /** Cancels, approval answers and backchannel probes for turns running on another instance. */
  private readonly control: ControlRpc
  private closingFlag = false

  constructor (deps: TurnServiceDeps) {
    this.deps = deps
    this.retention = new RetentionQueue(deps.config.turns.retention_ms)
    this.control = new ControlRpc({
      bus: deps.bus,
      instanceId: deps.instanceId,
      peers: async () => await deps.store.liveInstances(),
      timeoutMs: deps.config.cluster.control_timeout_ms,
      log: deps.log
    })
    this.control.serve(async (request) => await this.applyControl(request))
    deps.slots?.track(() => [...this.active.values()].map((a) => ({ owner: a.record.owner, turnId: a.record.turn_id })))
  }

  get activeCount (): number {
    return this.active.size
  }

  get closing (): boolean {
    return this.closingFlag
  }

  get catalog (): ToolCatalog {
    return this.deps.catalog
  }

  private later (ms: number, fn: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      fn()
    }, ms)
    timer.unref()
    this.timers.add(timer)
    return timer
  }

  /**
   * SESSION_BUSY only tells a principal about its own session: a session held by another
   * principal's running turn (also one whose record is not stored yet) is FORBIDDEN.
   */
  private checkSessionFree (sessionId: string, owner: string): void {
    const running = this.busySessions.get(sessionId)
    if (running === undefined) return
    if (this.active.get(running)?.record.owner !== owner) {
      this.deps.log.warn({ audit: 'cross_principal_session', principal: owner, session_id: sessionId }, 'refused a turn in a session of another principal')
      throw new TollgateError('FORBIDDEN', 'this session belongs to another principal')
    }
    throw new TollgateError('SESSION_BUSY', 'another turn of this session is still running')
  }

  /**
   * Starts a turn, or answers the turn a principal's `idempotency_key` already started (on any
   * instance, before any restart, within `turns.retention_ms`).
   */
  async start (principal: Principal, request: TurnRequest, options: StartOptions): Promise<{ turn: TurnRecord, created: boolean }> {
    if (this.closingFlag) throw new TollgateError('SHUTTING_DOWN', 'the gateway is shutting down')
    const owner = principalKey(principal)
    // Defaults spelled out or left out are the same request; so is a retry from another socket
    // (a client that lost its connection retries from a new one, on any instance).
    const fingerprint = canonicalJson({
      ...request,
      interactive: request.interactive !== false,
      detach: request.detach === true,
      idempotency_key: undefined,
      owner_connection: undefined
    })
    const claim: IdempotencyClaim | null = request.idempotency_key === undefined
      ? null
      : { owner, key: request.idempotency_key, fingerprint, expiresMs: Date.now() + this.deps.config.turns.retention_ms }
    if (claim !== null) {
      const seen = await this.deps.store.getIdempotency(owner, claim.key)
      if (seen !== null) return await this.repeated(principal, claim, seen)
    }
    try {
      return await this.startNew(principal, request, options, claim)
    } catch (err) {
      // A repeat racing its original (here or on another instance) can find the session busy or
      // the principal's slots taken by the racers before its claim loses: the original's claim,
      // once committed, is the answer then. Racers arrive within moments of each other.
      if (claim === null || !(err instanceof TollgateError) || !(err.code === 'SESSION_BUSY' || err.code === 'TOO_MANY_TURNS')) throw err
      for (let attempt = 0; attempt < RACE_POLLS; attempt++) {
        const seen = await this.deps.store.getIdempotency(owner, claim.key)
        if (seen !== null) return await this.repeated(principal, claim, seen)
        await sleep(RACE_POLL_MS)
      }
      throw err
    }
  }

  private async repeated (
    principal: Principal, claim: IdempotencyClaim, seen: IdempotencyRecord
  ): Promise<{ turn: TurnRecord, created: boolean }> {
    if (seen.fingerprint !== claim.fingerprint) {
      throw new TollgateError('IDEMPOTENCY_CONFLICT', 'this idempotency_key was used with a different request')
    }
    return { turn: await this.get(principal, seen.turnId), created: false }
  }

  private async startNew (
    principal: Principal, request: TurnRequest, options: StartOptions, claim: IdempotencyClaim | null
  ): Promise<{ turn: TurnRecord, created: boolean }> {
    const { config } = this.deps
    const owner = principalKey(principal)
    const now = Date.now()
    this.retention.sweep(now)

    if (options.ownerConnection !== null) {
      const connection = this.deps.connections.get(options.ownerConnection)
      // A client may name only a WebSocket as owner: it is the one kind that can answer approvals later.
      const named = request.owner_connection === options.ownerConnection
      if (connection === undefined || connection.principal !== owner || (named && connection.kind !== 'ws')) {
        if (connection !== undefined && connection.principal !== owner) {
          this.deps.log.warn({ audit: 'cross_principal_connection', principal: owner, connection_id: connection.id }, 'refused a turn owned by a connection of another principal')
        }
        throw new TollgateError('CONNECTION_NOT_FOUND', 'owner_connection is not a live WebSocket connection of this principal')
      }
    }
    this.checkCapacity(owner)

    const sessionId = request.session_id ?? `ses_${randomUUID()}`
    // Ownership before busy-ness: another principal's session answers FORBIDDEN whether or not a
    // turn runs in it, so the answer says nothing about that principal's activity.
    const existing = await this.deps.store.getSession(sessionId)
    if (existing !== null && existing.owner !== owner) {
      this.deps.log.warn({ audit: 'cross_principal_session', principal: owner, session_id: sessionId }, 'refused a turn in a session of another principal')
      throw new TollgateError('FORBIDDEN', 'this session belongs to another principal')
    }
    this.checkSessionFree(sessionId, owner)
    // Another instance may run this session's latest turn (this process's busy map cannot see it).
    const latest = existing?.turn_ids.at(-1)
    if (latest !== undefined && !this.active.has(latest) && (await this.deps.store.getTurn(latest))?.status === 'running') {
      throw new TollgateError('SESSION_BUSY', 'another turn of this session is still running')
    }
    const agentName = request.agent ?? existing?.agent ?? config.default_agent
    if (existing !== null && request.agent !== undefined && request.agent !== existing.agent) {
      throw new TollgateError('INVALID_REQUEST', `session ${sessionId} belongs to agent ${existing.agent}`)
    }
    const { runtime } = resolveAgent(config, agentName)
    const session: SessionRecord = existing ?? {
      session_id: sessionId, owner, agent: agentName, created_at: new Date(now).toISOString(), updated_at: new Date(now).toISOString(),
      turn_ids: [], history: [], always_allowed: []
    }

    const grants = new SessionGrants(session.always_allowed)
    const turnId = `turn_${randomUUID()}`
    const { keyId: receiptKeyId, key: receipts } = this.deps.receipts.forNewTurn(turnId)
    const exec = resolveTurnContext({
      config,
      agentName,
      catalog: this.deps.catalog,
      providers: this.deps.providers,
      observer: this.deps.observer,
      hooks: this.deps.hooks,
      grants,
      channel: options.channel,
      ...(request.tools === undefined ? {} : { narrowing: request.tools }),
      ...(this.deps.mcp === undefined ? {} : { mcp: this.deps.mcp }),
      message: request.message,
      receiptGenerator: () => receipts,
      workspaceDir: this.deps.workspaces.dirFor(principal.tenant, sessionId)
    })
    // Re-checked after the awaits above: two starts may race for one session or the last slot.
    this.checkSessionFree(sessionId, owner)
    this.checkCapacity(owner)

    const createdAt = new Date().toISOString()
    const record: TurnRecord = {
      turn_id: turnId, session_id: sessionId, agent: agentName, owner, status: 'running', created_at: createdAt, updated_at: createdAt,
      iterations: 0, tool_calls: [], approvals: [], last_seq: 0, receipt_key_id: receiptKeyId
    }
    const controller = new AbortController()
    let resolveDone!: (r: TurnRecord) => void
    const active: ActiveTurn = {
      record, controller, seq: 0, ownerConnection: options.ownerConnection, detach: request.detach === true,
      done: new Promise((resolve) => { resolveDone = resolve }), disposers: []
    }
    this.active.set(turnId, active)
    this.busySessions.set(sessionId, turnId)
    // The local count passed; the cluster-wide one (the principal's turns on every instance) decides.
    const { slots } = this.deps
    if (slots !== null && !await slots.acquire(owner, turnId, config.turns.max_active_turns_per_principal)) {
      this.abandon(active, false)
      const cap = config.turns.max_active_turns_per_principal
      throw new TollgateError('TOO_MANY_TURNS', `this principal already runs ${cap} turns across all instances; wait for one to end`)
    }

    session.turn_ids.push(turnId)
    let held: IdempotencyRecord | null
    try {
      held = await this.deps.store.createTurn(record, session, claim)
    } catch (err) {
      this.abandon(active)
      this.deps.log.error({ err, turn_id: turnId }, 'could not record a new turn')
      throw new TollgateError('NOT_READY', 'the store is unavailable; retry later')
    }
    if (held !== null && claim !== null) {
      // Another start (here or on another instance) won this key meanwhile: nothing was written.
      this.abandon(active)
      return await this.repeated(principal, claim, held)
    }
    this.bindOwner(active)
    if (options.ownerConnection !== null) this.deps.connections.get(options.ownerConnection)?.follow?.(turnId)
    if (config.turns.turn_timeout_ms > 0) {
      const timer = this.later(config.turns.turn_timeout_ms, () => { controller.abort(new TurnTimeout('turn timeout')) })
      active.disposers.push(() => { clearTimeout(timer); this.timers.delete(timer) })
    }

    const history = trimHistory([...session.history, { role: 'user', content: request.message }], runtime.max_history_messages)
    const log = this.deps.log.child({ turn_id: turnId, session_id: sessionId, agent: agentName })
    const emit = (event: TurnEvent): void => { this.emit(active, event) }
    const state: TurnState = {
      turnId,
      sessionId,
      history,
      signal: controller.signal,
      interactive: request.interactive !== false,
      log,
      emit,
      approvals: this.broker.channelFor({ turnId, owner, hasBackchannel: () => this.hasBackchannel(active), emit }),
      // Slots settle out of order (preparation fills some before others run); the record keeps model order.
      recordToolCall: (r) => {
        const at = record.tool_calls.findIndex((c) => c.iteration > r.iteration || (c.iteration === r.iteration && c.index > r.index))
        if (at === -1) record.tool_calls.push(r)
        else record.tool_calls.splice(at, 0, r)
        this.checkpoint(record, log)
      },
      recordApproval: (e) => {
        record.approvals.push(e)
        this.checkpoint(record, log)
      },
      promptShellSignatures: new Set(),
      ...freshLoopBookkeeping(runtime)
    }

    emit({ kind: 'turn.started', session_id: sessionId, agent: agentName })
    const correlation = { turn_id: turnId, session_id: sessionId, agent: agentName, channel: options.channel }
    exec.observer.record({ kind: 'turn_start', provider: exec.model.provider.name, model: exec.model.model, ...correlation })
    const started = performance.now()

    void (async () => {
      let outcome: TurnOutcome
      try {
        outcome = await runToolLoop(exec, state)
      } catch (err) {
        log.error({ err }, 'turn loop crashed')
        outcome = { status: 'failed', code: 'INTERNAL', message: 'internal error' }
      }
      if (outcome.status === 'cancelled' && controller.signal.reason instanceof TurnTimeout) {
        outcome = { status: 'failed', code: 'TURN_TIMEOUT', message: `turn exceeded ${config.turns.turn_timeout_ms} ms` }
      }
      await this.finish(active, session, state, outcome, grants)
      exec.observer.record({
        kind: 'turn_end', status: record.status, duration_ms: Math.round(performance.now() - started), iterations: record.iterations,
        ...(outcome.status === 'failed' ? { code: outcome.code } : {}), ...correlation
      })
      resolveDone(record)
    })()
    return { turn: record, created: true }
  }

  /** Nothing ran yet: releases the slots and the session, so the client can simply retry. */
  private abandon (active: ActiveTurn, heldSlot = true): void {
    this.active.delete(active.record.turn_id)
    this.busySessions.delete(active.record.session_id)
    if (heldSlot) this.deps.slots?.release(active.record.owner, active.record.turn_id)
  }

  /** One principal may not take every slot: the per-principal cap keeps other tenants served. */
  private checkCapacity (owner: string): void {
    const { turns } = this.deps.config
    if (this.active.size >= turns.max_active_turns) throw new TollgateError('TOO_MANY_TURNS', 'too many turns are running; retry later')
    let owned = 0
    for (const a of this.active.values()) if (a.record.owner === owner) owned++
    if (owned >= turns.max_active_turns_per_principal) {
      throw new TollgateError('TOO_MANY_TURNS', `this principal already runs ${owned} turns (at most ${turns.max_active_turns_per_principal}); wait for one to finish`)
    }
  }

  private bindOwner (active: ActiveTurn): void {
    const id = active.ownerConnection
    if (id === null) return
    const { config } = this.deps
    const dispose = this.deps.connections.onClose(id, () => {
      if (active.detach || TERMINAL_STATUS.has(active.record.status)) return
      const cancel = (): void => { active.controller.abort(new CancelReason('owner connection closed')) }
      if (config.turns.disconnect_grace_ms === 0) {
        cancel()
        return
      }
      // The grace exists so a client can reconnect and resume: if the owner principal follows the
      // turn again from a streaming connection by then, that connection becomes the owner.
      const timer = this.later(config.turns.disconnect_grace_ms, () => {
        if (TERMINAL_STATUS.has(active.record.status)) return
        const successor = this.deps.connections.follower(active.record.owner, active.record.turn_id)
        if (successor === undefined) {
          cancel()
          return
        }
        active.ownerConnection = successor.id
        this.bindOwner(active)
      })
      active.disposers.push(() => { clearTimeout(timer); this.timers.delete(timer) })
    })
    active.disposers.push(dispose)
  }

  /** Saves a running turn's progress, so a crash keeps its tool calls and approval audit. */
  private checkpoint (record: TurnRecord, log: Logger): void {
    this.deps.store.saveTurn(record).catch((err: unknown) => { log.warn({ err }, 'could not checkpoint the turn') })
  }

  private async hasBackchannel (active: ActiveTurn): Promise<boolean> {
    const { record } = active
    if (active.ownerConnection !== null) {
      const owner = this.deps.connections.get(active.ownerConnection)
      if (owner !== undefined && !owner.closed && owner.kind !== 'http' && owner.canAnswer) return true
    }
    if (this.deps.connections.watchedBy(record.owner, record.turn_id, record.session_id)) return true
    // An operator may watch from a socket on another instance.
    const reply = await this.control.request({ type: 'watching', turn_id: record.turn_id, session_id: record.session_id, principal: record.owner })
    return reply !== null && reply.error === undefined
  }

  /** `ts` is given for the terminal event, whose time the record was already saved with. */
  private emit (active: ActiveTurn, event: TurnEvent, ts: string = new Date().toISOString()): void {
    active.seq += 1
    const { record } = active
    record.last_seq = active.seq
    record.updated_at = ts
    if (event.kind === 'iteration') record.iterations = event.n
    const envelope: BusEnvelope = { turn_id: record.turn_id, session_id: record.session_id, seq: active.seq, ts, event }
    this.deps.bus.publish(envelope)
  }

  private async finish (
    active: ActiveTurn, session: SessionRecord, state: TurnState, outcome: TurnOutcome, grants: SessionGrants
  ): Promise<void> {
    const { record } = active
    record.status = outcome.status
    let terminal: TurnEvent
    if (outcome.status === 'completed') {
      record.final_text = outcome.finalText
      terminal = { kind: 'turn.completed', final_text: outcome.finalText }
    } else if (outcome.status === 'cancelled') {
      terminal = { kind: 'turn.cancelled', reason: outcome.reason }
    } else {
      // Failure text can quote provider or tool errors, so it is rendered scrubbed.
      const message = scrubText(outcome.message)
      record.error = { code: outcome.code, message }
      terminal = { kind: 'turn.failed', code: outcome.code, message }
    }
    const { config } = this.deps
    session.history = state.history
    session.always_allowed = grants.list()
    // Persisted before the terminal event goes out: whoever sees it, on any instance, and then
    // reads the turn or starts the session's next turn finds the finished state in the store.
    record.last_seq = active.seq + 1
    record.updated_at = new Date().toISOString()
    session.updated_at = record.updated_at
    try {
      await this.deps.store.saveTurnAndSession(record, session)
    } catch (err) {
      state.log.error({ err }, 'could not persist the finished turn')
    }
    this.emit(active, terminal, record.updated_at)
    for (const dispose of active.disposers) dispose()
    this.active.delete(record.turn_id)
    this.busySessions.delete(record.session_id)
    this.deps.slots?.release(record.owner, record.turn_id)
    this.retention.add(Date.now() + config.turns.retention_ms, () => { this.deps.bus.drop(record.turn_id) })
  }

  private async findTurn (turnId: string): Promise<TurnRecord | null> {
    return this.active.get(turnId)?.record ?? await this.deps.store.getTurn(turnId)
  }

  /** Another principal's turn answers exactly like a missing one. */
  async get (principal: Principal, turnId: string): Promise<TurnRecord> {
    const turn = await this.findTurn(turnId)
    if (turn === null || turn.owner !== principalKey(principal)) {
      if (turn !== null) this.deps.log.warn({ audit: 'cross_principal_turn', principal: principalKey(principal), turn_id: turnId }, 'refused access to a turn of another principal')
      throw new TollgateError('TURN_NOT_FOUND', 'no turn with this id')
    }
    return turn
  }

  async session (principal: Principal, sessionId: string): Promise<SessionRecord> {
    const session = await this.deps.store.getSession(sessionId)
    if (session === null || session.owner !== principalKey(principal)) {
      if (session !== null) this.deps.log.warn({ audit: 'cross_principal_session', principal: principalKey(principal), session_id: sessionId }, 'refused access to a session of another principal')
      throw new TollgateError('SESSION_NOT_FOUND', 'no session with this id')
    }
    return session
  }

  async replay (principal: Principal, turnId: string, afterSeq: number): Promise<{ turn: TurnRecord, replay: ReplayResult }> {
    const turn = await this.get(principal, turnId)
    return { turn, replay: await this.deps.bus.replay(turnId, afterSeq, turn.last_seq) }
  }

  async waitFor (principal: Principal, turnId: string): Promise<TurnRecord> {
    const turn = await this.get(principal, turnId)
    const active = this.active.get(turnId)
    return active === undefined ? turn : await active.done
  }

  isRunningHere (turnId: string): boolean {
    return this.active.has(turnId)
  }

  async cancel (principal: Principal, turnId: string, reason: string): Promise<TurnRecord> {
    const turn = await this.get(principal, turnId)
    const active = this.active.get(turnId)
    if (active !== undefined) {
      active.controller.abort(new CancelReason(reason))
      return await active.done
    }
    if (turn.status !== 'running') return turn
    // Running elsewhere: its instance cancels it and answers once the turn has ended.
    await this.control.request({ type: 'cancel', turn_id: turnId, principal: principalKey(principal), reason })
    return await this.deps.store.getTurn(turnId) ?? turn
  }

  /** Operator answer from any front door (WS frame or REST), for a turn on any instance. */
  async answerApproval (principal: Principal, requestId: string, answer: Omit<OperatorAnswer, 'principal'>): Promise<{ turnId: string }> {
    const key = principalKey(principal)
    if (this.broker.isLocal(requestId)) {
      try {
        return this.broker.answer(requestId, { ...answer, principal: key })
      } catch (err) {
        if (err instanceof TollgateError && err.code === 'APPROVAL_NOT_FOUND') {
          this.deps.log.warn({ audit: 'cross_principal_approval', principal: key, request_id: requestId }, 'refused an answer to an approval request of another principal')
        }
        throw err
      }
    }
    const reply = await this.control.request({
      type: 'approval', request_id: requestId, principal: key, decision: answer.decision, decided_by: answer.decidedBy, channel: answer.channel,
      ...(answer.replacement === undefined ? {} : { replacement: answer.replacement })
    })
    if (reply === null) throw new TollgateError('APPROVAL_NOT_FOUND', 'no pending approval request with this id')
    if (reply.error !== undefined || reply.turn_id === undefined) throw remoteError(reply.error ?? 'INTERNAL')
    return { turnId: reply.turn_id }
  }

  /** A control request from another instance: answers a body if it concerns a turn running here. */
  private async applyControl (request: ControlRequest): Promise<ReplyBody | null> {
    switch (request.type) {
      case 'cancel': {
        const active = this.active.get(request.turn_id)
        if (active === undefined) return null
        if (active.record.owner !== request.principal) return { error: 'TURN_NOT_FOUND' }
        active.controller.abort(new CancelReason(request.reason))
        const done = await active.done
        return { turn_id: done.turn_id, status: done.status }
      }
      case 'approval': {
        if (!this.broker.isLocal(request.request_id)) return null
        try {
          const { turnId } = this.broker.answer(request.request_id, {
            decision: request.decision, decidedBy: request.decided_by, channel: request.channel, principal: request.principal,
            ...(request.replacement === undefined ? {} : { replacement: request.replacement })
          })
          return { turn_id: turnId }
        } catch (err) {
          if (err instanceof TollgateError) return { error: err.code }
          throw err
        }
      }
      case 'watching':
        return this.deps.connections.watchedBy(request.principal, request.turn_id, request.session_id) ? {} : null
    }
  }

  /**
   * The turn's receipt key, derived again from the master key its record names: the same on every
   * instance and after a restart. Null when that master key is not configured here (any more).
   */
  receiptKeyOf (turn: TurnRecord): ReceiptKey | null {
    return turn.receipt_key_id === undefined ? null : this.deps.receipts.keyFor(turn.turn_id, turn.receipt_key_id)
  }

  /** Cancels every running turn and waits for each to record its terminal event. */
  async shutdown (): Promise<void> {
    this.closingFlag = true
    const running = [...this.active.values()]
    for (const a of running) a.controller.abort(new CancelReason('server shutting down'))
    await Promise.all(running.map(async (a) => await a.done))
    this.control.close()
    this.retention.close()
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
  }
}
