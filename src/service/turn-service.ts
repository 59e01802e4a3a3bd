/**
 * Turn service: the one object routes and transports call. It admits a turn (admission.ts),
 * builds its engine context, runs it as a RunningTurn (running-turn.ts) and answers
 * ownership-checked queries, cancels and approval answers, here or, through the control plane,
 * on the instance that runs the turn (remote.ts serves the other side).
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { TurnEvent } from '../../schemas/events.js'
import type { PendingApproval } from '../../schemas/approval.js'
import type { SessionSummary } from '../../schemas/session.js'
import type { TurnRequest, TurnSummary } from '../../schemas/turn.js'
import type { Config } from '../core/config.js'
import type { ApprovalBroker, OperatorAnswer } from '../approval/broker.js'
import { SessionGrants } from '../approval/grants.js'
import { principalKey, type Principal } from '../auth/principal.js'
import type { EventBus, ReplayResult } from '../bus/bus.js'
import { ControlRpc, remoteError } from '../cluster/control.js'
import type { TurnSlots } from '../cluster/turn-slots.js'
import { ERRORS, TollgateError } from '../core/errors.js'
import type { McpToolSource } from '../tools/contract.js'
import type { Observer } from '../observe/observer.js'
import type { ModelProvider } from '../providers/types.js'
import type { ReceiptKey } from '../receipts/keys.js'
import type { ReceiptKeyring } from '../receipts/keyring.js'
import type { IdempotencyClaim, PageKey, SessionRecord, Store, TurnFilter, TurnRecord } from '../store/store.js'
import type { WorkspaceLayout } from '../tools/builtin/workspace-layout.js'
import type { ToolCatalog } from '../tools/catalog.js'
import { freshLoopBookkeeping, resolveAgent, resolveTurnContext, type ResolvedAgentExecution, type TurnState } from '../turn/context.js'
import type { ToolHooks } from '../turn/hooks.js'
import { trimHistory } from '../turn/history.js'
import { CancelReason, runToolLoop, type TurnOutcome } from '../turn/loop.js'
import { UsageTally } from '../turn/usage.js'
import { Admission } from './admission.js'
import { decodeCursor, newestFirst, pageOf } from './pages.js'
import type { ConnectionRegistry } from './connections.js'
import { applyControl } from './remote.js'
import { RetentionQueue } from './retention.js'
import { RunningTurn, type TurnHost } from './running-turn.js'

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
  /** Routes approval questions to people; composed outside so transports share it. */
  broker: ApprovalBroker
  /** This gateway instance, as named on the bus's control plane. */
  instanceId: string
  /** Master keys the turns' receipt keys are derived from. */
  receipts: ReceiptKeyring
  /** Per-principal turn slots shared with the other instances (Redis bus); null: this instance's count alone. */
  slots: TurnSlots | null
}

/** Bound on the running turns one principal's approval listing reads (max_active_turns_per_principal per instance). */
const MAX_RUNNING_SCAN = 1000

export interface Page<T> {
  items: T[]
  next_cursor: string | null
}

/** How long a refused start with an idempotency key looks for a racing original's claim: 10 × 50 ms. */
const RACE_POLLS = 10
const RACE_POLL_MS = 50

export interface StartOptions {
  /** Connection whose closing cancels the turn (unless detached) and which answers approvals. */
  ownerConnection: string | null
  /** Transport label for audit and observer records. */
  channel: string
}

export class TurnService {
  readonly broker: ApprovalBroker
  private readonly deps: TurnServiceDeps
  private readonly active = new Map<string, RunningTurn>()
  private readonly admission: Admission
  private readonly timers = new Set<NodeJS.Timeout>()
  private readonly retention: RetentionQueue
  private readonly host: TurnHost
  /** Cancels, approval answers and backchannel probes for turns running on another instance. */
  private readonly control: ControlRpc
  private closingFlag = false

  constructor (deps: TurnServiceDeps) {
    this.deps = deps
    this.broker = deps.broker
    this.retention = new RetentionQueue(deps.config.turns.retention_ms)
    const { config, store, bus, connections, log } = deps
    this.admission = new Admission({ config, store, connections, log, active: this.active })
    this.host = {
      config, store, bus, connections,
      later: (ms, fn) => this.later(ms, fn),
      clear: (timer) => { clearTimeout(timer); this.timers.delete(timer) }
    }
    this.control = new ControlRpc({
      bus: deps.bus,
      instanceId: deps.instanceId,
      peers: async () => await deps.store.liveInstances(),
      timeoutMs: deps.config.cluster.control_timeout_ms,
      log: deps.log
    })
    this.control.serve(async (request) => await applyControl({ active: this.active, broker: this.broker, connections }, request))
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
   * Starts a turn, or answers the turn a principal's `idempotency_key` already started (on any
   * instance, before any restart, within `turns.retention_ms`).
   */
  async start (principal: Principal, request: TurnRequest, options: StartOptions): Promise<{ turn: TurnRecord, created: boolean }> {
    if (this.closingFlag) throw new TollgateError('SHUTTING_DOWN')
    const claim = this.admission.claimOf(principalKey(principal), request)
    const seen = claim === null ? null : await this.admission.repeatOf(claim)
    if (seen !== null) return { turn: await this.get(principal, seen), created: false }
    try {
      return await this.startNew(principal, request, options, claim)
    } catch (err) {
      // A repeat racing its original (here or on another instance) can find the session busy or
      // the principal's slots taken by the racers before its claim loses: the original's claim,
      // once committed, is the answer then. Racers arrive within moments of each other.
      if (claim === null || !(err instanceof TollgateError) || !(err.code === 'SESSION_BUSY' || err.code === 'TOO_MANY_TURNS')) throw err
      for (let attempt = 0; attempt < RACE_POLLS; attempt++) {
        const original = await this.admission.repeatOf(claim)
        if (original !== null) return { turn: await this.get(principal, original), created: false }
        await sleep(RACE_POLL_MS)
      }
      throw err
    }
  }

  private async startNew (
    principal: Principal, request: TurnRequest, options: StartOptions, claim: IdempotencyClaim | null
  ): Promise<{ turn: TurnRecord, created: boolean }> {
    const { config } = this.deps
    const owner = principalKey(principal)
    const now = Date.now()
    this.retention.sweep(now)
    this.admission.checkOwnerConnection(owner, request, options.ownerConnection)
    this.admission.checkCapacity(owner)

    const sessionId = request.session_id ?? `ses_${randomUUID()}`
    const existing = await this.admission.admitSession(sessionId, owner)
    const agentName = request.agent ?? existing?.agent ?? config.default_agent
    if (existing !== null && request.agent !== undefined && request.agent !== existing.agent) {
      throw new TollgateError('INVALID_REQUEST', `session ${sessionId} belongs to agent ${existing.agent}`)
    }
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
      ...(request.approval_timeout_ms === undefined ? {} : { approvalTimeoutMs: request.approval_timeout_ms }),
      receiptGenerator: () => receipts,
      workspaceDir: this.deps.workspaces.dirFor(principal.tenant, sessionId)
    })
    // Re-checked after the awaits above: two starts may race for one session or the last slot.
    this.admission.checkSessionFree(sessionId, owner)
    this.admission.checkCapacity(owner)

    const createdAt = new Date().toISOString()
    const record: TurnRecord = {
      turn_id: turnId, session_id: sessionId, agent: agentName, owner, status: 'running', created_at: createdAt, updated_at: createdAt,
      iterations: 0, tool_calls: [], approvals: [], pending_approvals: [], last_seq: 0, receipt_key_id: receiptKeyId
    }
    const running = new RunningTurn(this.host, record, options.ownerConnection, request.detach === true, receipts)
    this.active.set(turnId, running)
    this.admission.hold(turnId, sessionId)
    // The local count passed; the cluster-wide one (the principal's turns on every instance) decides.
    const { slots } = this.deps
    if (slots !== null && !await slots.acquire(owner, turnId, config.turns.max_active_turns_per_principal)) {
      this.abandon(record, false)
      const cap = config.turns.max_active_turns_per_principal
      throw new TollgateError('TOO_MANY_TURNS', `this principal already runs ${cap} turns across all instances; wait for one to end`)
    }
    session.turn_ids.push(turnId)
    // A session is "updated" when a turn starts in it too: listings show the active one first.
    session.updated_at = createdAt
    let held
    try {
      held = await this.deps.store.createTurn(record, session, claim)
    } catch (err) {
      this.abandon(record)
      this.deps.log.error({ err, turn_id: turnId }, 'could not record a new turn')
      throw new TollgateError('NOT_READY')
    }
    if (held !== null && claim !== null) {
      // Another start (here or on another instance) won this key meanwhile: nothing was written.
      this.abandon(record)
      const original = await this.admission.repeatOf(claim) ?? held.turnId
      return { turn: await this.get(principal, original), created: false }
    }
    running.bindOwner()
    if (options.ownerConnection !== null) this.deps.connections.get(options.ownerConnection)?.follow?.(turnId)
    running.armTimeout()

    const state = this.turnState(running, session, request)
    state.emit({ kind: 'turn.started', session_id: sessionId, agent: agentName })
    void this.run(running, exec, state, session, grants, options.channel)
    return { turn: record, created: true }
  }

  /** Nothing ran yet: releases the slots and the session, so the client can simply retry. */
  private abandon (record: TurnRecord, heldSlot = true): void {
    this.active.delete(record.turn_id)
    this.admission.release(record.session_id)
    if (heldSlot) this.deps.slots?.release(record.owner, record.turn_id)
  }

  private turnState (running: RunningTurn, session: SessionRecord, request: TurnRequest): TurnState {
    const { record } = running
    const { turn_id: turnId, session_id: sessionId, owner } = record
    const { runtime } = resolveAgent(this.deps.config, record.agent)
    const history = trimHistory([...session.history, { role: 'user', content: request.message }], runtime.max_history_messages)
    const log = this.deps.log.child({ turn_id: turnId, session_id: sessionId, agent: record.agent })
    const emit = (event: TurnEvent): void => { running.emit(event) }
    const usage = new UsageTally()
    return {
      turnId,
      sessionId,
      history,
      signal: running.controller.signal,
      interactive: request.interactive !== false,
      log,
      emit,
      approvals: this.broker.channelFor({
        turnId,
        sessionId,
        owner,
        hasBackchannel: () => this.hasBackchannel(running),
        emit,
        onPending: (requestId, request) => {
          // A turn asks its calls one at a time in model order (approval makes a batch sequential): appending keeps it.
          record.pending_approvals = request === null
            ? record.pending_approvals.filter((p) => p.request_id !== requestId)
            : [...record.pending_approvals, request]
          running.checkpoint(log)
        }
      }),
      // Slots settle out of order (preparation fills some before others run); the record keeps model order.
      recordToolCall: (r) => {
        const at = record.tool_calls.findIndex((c) => c.iteration > r.iteration || (c.iteration === r.iteration && c.index > r.index))
        if (at === -1) record.tool_calls.push(r)
        else record.tool_calls.splice(at, 0, r)
        running.checkpoint(log)
      },
      recordApproval: (e) => {
        record.approvals.push(e)
        running.checkpoint(log)
      },
      // Kept on the record as it grows (a running turn's GET shows it); stored with the next save.
      recordCallUsage: (u) => {
        usage.add(u)
        const current = usage.current()
        if (current !== undefined) record.usage = current
      },
      promptShellSignatures: new Set(),
      ...freshLoopBookkeeping(runtime)
    }
  }

  private async run (
    running: RunningTurn, exec: ResolvedAgentExecution, state: TurnState, session: SessionRecord, grants: SessionGrants, channel: string
  ): Promise<void> {
    const { record } = running
    const correlation = { turn_id: record.turn_id, session_id: record.session_id, agent: record.agent, channel }
    exec.observer.record({
      kind: 'turn_start', provider: exec.model.provider.name, provider_kind: exec.model.provider.kind, model: exec.model.model,
      ...correlation
    })
    const started = performance.now()
    let outcome: TurnOutcome
    try {
      outcome = await runToolLoop(exec, state)
    } catch (err) {
      state.log.error({ err }, 'turn loop crashed')
      outcome = { status: 'failed', code: 'INTERNAL', message: ERRORS.INTERNAL.message }
    }
    outcome = running.settle(outcome)
    await running.finish(session, state, outcome, grants)
    this.active.delete(record.turn_id)
    this.admission.release(record.session_id)
    this.deps.slots?.release(record.owner, record.turn_id)
    this.retention.add(Date.now() + this.deps.config.turns.retention_ms, () => { this.deps.bus.drop(record.turn_id) })
    exec.observer.record({
      kind: 'turn_end', status: record.status, duration_ms: performance.now() - started, iterations: record.iterations,
      ...(outcome.status === 'failed' ? { code: outcome.code } : {}), ...correlation
    })
    running.resolve()
  }

  private async hasBackchannel (running: RunningTurn): Promise<boolean> {
    const { record } = running
    if (running.ownerConnection !== null) {
      const owner = this.deps.connections.get(running.ownerConnection)
      if (owner !== undefined && !owner.closed && owner.kind !== 'http' && owner.canAnswer) return true
    }
    if (this.deps.connections.watchedBy(record.owner, record.turn_id, record.session_id)) return true
    // An operator may watch from a socket on another instance.
    const reply = await this.control.request({ type: 'watching', turn_id: record.turn_id, session_id: record.session_id, principal: record.owner })
    return reply !== null && reply.error === undefined
  }

  private async findTurn (turnId: string): Promise<TurnRecord | null> {
    return this.active.get(turnId)?.record ?? await this.deps.store.getTurn(turnId)
  }

  /** Another principal's turn answers exactly like a missing one. */
  async get (principal: Principal, turnId: string): Promise<TurnRecord> {
    const turn = await this.findTurn(turnId)
    if (turn === null || turn.owner !== principalKey(principal)) {
      if (turn !== null) this.deps.log.warn({ audit: 'cross_principal_turn', principal: principalKey(principal), turn_id: turnId }, 'refused access to a turn of another principal')
      throw new TollgateError('TURN_NOT_FOUND')
    }
    return turn
  }

  async session (principal: Principal, sessionId: string): Promise<SessionRecord> {
    const session = await this.deps.store.getSession(sessionId)
    if (session === null || session.owner !== principalKey(principal)) {
      if (session !== null) this.deps.log.warn({ audit: 'cross_principal_session', principal: principalKey(principal), session_id: sessionId }, 'refused access to a session of another principal')
      throw new TollgateError('SESSION_NOT_FOUND')
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

  /**
   * Hands a running turn of `principal` to another of its live connections, or to none: an
   * unowned turn runs on as if detached (the AG-UI and AI SDK adapters end their stream on an
   * approval request and the turn keeps waiting for the answer). A turn that already ended, or
   * runs on another instance, is left as it is.
   */
  setOwner (principal: Principal, turnId: string, connectionId: string | null): void {
    const running = this.active.get(turnId)
    if (running === undefined || running.record.owner !== principalKey(principal)) return
    if (connectionId !== null && this.deps.connections.get(connectionId)?.principal !== running.record.owner) {
      throw new TollgateError('CONNECTION_NOT_FOUND', 'the new owner is not a live connection of this principal')
    }
    running.ownerConnection = connectionId
    running.bindOwner()
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

  async pendingApprovals (
    principal: Principal, query: { sessionId?: string, turnId?: string, limit: number, cursor?: string }
  ): Promise<Page<PendingApproval>> {
    const owner = principalKey(principal)
    const before = decodeCursor(query.cursor)
    const byTurn = new Map<string, PendingApproval[]>()
    const filter = query.sessionId === undefined ? { status: 'running' } : { status: 'running', sessionId: query.sessionId }
    for (const t of await this.deps.store.listTurns(owner, filter, MAX_RUNNING_SCAN)) byTurn.set(t.turn_id, t.pending_approvals)
    for (const running of this.active.values()) {
      const r = running.record
      if (r.owner !== owner || (query.sessionId !== undefined && r.session_id !== query.sessionId)) continue
      byTurn.set(r.turn_id, r.pending_approvals)
    }
    const keyOf = (p: PendingApproval): PageKey => ({ at: p.requested_at, id: p.request_id })
    const all = [...byTurn.values()].flat()
      .filter((p) => query.turnId === undefined || p.turn_id === query.turnId)
      .filter((p) => before === undefined || newestFirst(keyOf(p), before) > 0)
      .sort((a, b) => newestFirst(keyOf(a), keyOf(b)))
    return pageOf(all.slice(0, query.limit + 1), query.limit, keyOf)
  }

  /** The principal's sessions, most recently updated first, each with its running turn if any. */
  async listSessions (principal: Principal, query: { limit: number, cursor?: string }): Promise<Page<SessionSummary>> {
    const fetched = await this.deps.store.listSessions(principalKey(principal), query.limit + 1, decodeCursor(query.cursor))
    const page = pageOf(fetched, query.limit, (s) => ({ at: s.updated_at, id: s.session_id }))
    const items = await Promise.all(page.items.map(async (s): Promise<SessionSummary> => ({
      session_id: s.session_id,
      agent: s.agent,
      created_at: s.created_at,
      updated_at: s.updated_at,
      active_turn_id: await this.activeTurnOf(s)
    })))
    return { items, next_cursor: page.next_cursor }
  }

  private async activeTurnOf (session: SessionRecord): Promise<string | null> {
    for (const running of this.active.values()) if (running.record.session_id === session.session_id) return running.record.turn_id
    // Only a session's latest turn can be running (one at a time), maybe on another instance.
    const latest = session.turn_ids.at(-1)
    if (latest === undefined) return null
    return (await this.deps.store.getTurn(latest))?.status === 'running' ? latest : null
  }

  /** The principal's turns, newest first, optionally of one session and/or in one status. */
  async listTurns (
    principal: Principal, query: { sessionId?: string, status?: string, limit: number, cursor?: string }
  ): Promise<Page<TurnSummary>> {
    const filter: TurnFilter = {}
    if (query.sessionId !== undefined) filter.sessionId = query.sessionId
    if (query.status !== undefined) filter.status = query.status
    const fetched = await this.deps.store.listTurns(principalKey(principal), filter, query.limit + 1, decodeCursor(query.cursor))
    const page = pageOf(fetched, query.limit, (t) => ({ at: t.created_at, id: t.turn_id }))
    return {
      // A running turn's own record here is fresher than its last checkpoint.
      items: page.items.map((stored) => {
        const t = this.active.get(stored.turn_id)?.record ?? stored
        const { turn_id: turnId, session_id: sessionId, agent, status, created_at: createdAt, updated_at: updatedAt } = t
        return { turn_id: turnId, session_id: sessionId, agent, status, created_at: createdAt, updated_at: updatedAt }
      }),
      next_cursor: page.next_cursor
    }
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
    if (reply === null) throw new TollgateError('APPROVAL_NOT_FOUND')
    if (reply.error !== undefined || reply.turn_id === undefined) throw remoteError(reply.error ?? 'INTERNAL')
    return { turnId: reply.turn_id }
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
