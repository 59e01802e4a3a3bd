/**
 * Turn service: the one object routes and transports call. It admits a turn (admission.ts),
 * builds its engine context, runs it as a RunningTurn (running-turn.ts) and answers
 * ownership-checked queries, cancels and approval answers, here or, through the control plane,
 * on the instance that runs the turn (remote.ts serves the other side).
 */
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { TurnEvent } from '../../schemas/events.js'
import type { TurnRequest } from '../../schemas/turn.js'
import type { Config } from '../core/config.js'
import type { ApprovalBroker, OperatorAnswer } from '../approval/broker.js'
import { SessionGrants } from '../approval/grants.js'
import { principalKey, type Principal } from '../auth/principal.js'
import type { EventBus, ReplayResult } from '../bus/bus.js'
import { ControlRpc, remoteError } from '../cluster/control.js'
import { ERRORS, TollgateError } from '../core/errors.js'
import type { McpToolSource } from '../tools/contract.js'
import type { Observer } from '../observe/observer.js'
import type { ModelProvider } from '../providers/types.js'
import { ReceiptKey } from '../receipts/keys.js'
import { ReceiptKeyring } from '../receipts/keyring.js'
import type { SessionRecord, Store, TurnRecord } from '../store/store.js'
import type { WorkspaceLayout } from '../tools/builtin/workspace-layout.js'
import type { ToolCatalog } from '../tools/catalog.js'
import { freshLoopBookkeeping, resolveAgent, resolveTurnContext, type ResolvedAgentExecution, type TurnState } from '../turn/context.js'
import type { ToolHooks } from '../turn/hooks.js'
import { trimHistory } from '../turn/history.js'
import { CancelReason, runToolLoop, type TurnOutcome } from '../turn/loop.js'
import { Admission } from './admission.js'
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
}

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
  private readonly receiptKeys = new ReceiptKeyring()
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
    this.admission = new Admission({ config, store, connections, log, retention: this.retention, active: this.active })
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

  async start (principal: Principal, request: TurnRequest, options: StartOptions): Promise<{ turn: TurnRecord, created: boolean }> {
    if (this.closingFlag) throw new TollgateError('SHUTTING_DOWN')
    const { config } = this.deps
    const owner = principalKey(principal)
    const now = Date.now()
    this.retention.sweep(now)
    const idem = this.admission.idempotent(owner, request)
    if (idem.seen !== null) return { turn: await this.get(principal, idem.seen), created: false }
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
    const receipts = new ReceiptKey()
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
    this.admission.checkSessionFree(sessionId, owner)
    this.admission.checkCapacity(owner)

    const turnId = `turn_${randomUUID()}`
    const createdAt = new Date().toISOString()
    const record: TurnRecord = {
      turn_id: turnId, session_id: sessionId, agent: agentName, owner, status: 'running', created_at: createdAt, updated_at: createdAt,
      iterations: 0, tool_calls: [], approvals: [], last_seq: 0
    }
    const running = new RunningTurn(this.host, record, options.ownerConnection, request.detach === true, receipts)
    this.active.set(turnId, running)
    this.admission.hold(turnId, sessionId, idem, now)
    session.turn_ids.push(turnId)
    try {
      await this.deps.store.saveTurnAndSession(record, session)
    } catch (err) {
      // Nothing ran yet: release the slot and the session so the client can simply retry.
      this.active.delete(turnId)
      this.admission.release(sessionId, idem.key)
      this.deps.log.error({ err, turn_id: turnId }, 'could not record a new turn')
      throw new TollgateError('NOT_READY')
    }
    running.bindOwner()
    if (options.ownerConnection !== null) this.deps.connections.get(options.ownerConnection)?.follow?.(turnId)
    running.armTimeout()

    const state = this.turnState(running, session, request)
    state.emit({ kind: 'turn.started', session_id: sessionId, agent: agentName })
    void this.run(running, exec, state, session, grants, options.channel)
    return { turn: record, created: true }
  }

  private turnState (running: RunningTurn, session: SessionRecord, request: TurnRequest): TurnState {
    const { record } = running
    const { turn_id: turnId, session_id: sessionId, owner } = record
    const { runtime } = resolveAgent(this.deps.config, record.agent)
    const history = trimHistory([...session.history, { role: 'user', content: request.message }], runtime.max_history_messages)
    const log = this.deps.log.child({ turn_id: turnId, session_id: sessionId, agent: record.agent })
    const emit = (event: TurnEvent): void => { running.emit(event) }
    return {
      turnId,
      sessionId,
      history,
      signal: running.controller.signal,
      interactive: request.interactive !== false,
      log,
      emit,
      approvals: this.broker.channelFor({ turnId, owner, hasBackchannel: () => this.hasBackchannel(running), emit }),
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
    const expires = Date.now() + this.deps.config.turns.retention_ms
    this.receiptKeys.keep(record.turn_id, running.receipts, expires)
    this.retention.add(expires, () => {
      this.receiptKeys.forget(record.turn_id)
      this.deps.bus.drop(record.turn_id)
    })
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
    if (reply === null) throw new TollgateError('APPROVAL_NOT_FOUND')
    if (reply.error !== undefined || reply.turn_id === undefined) throw remoteError(reply.error ?? 'INTERNAL')
    return { turnId: reply.turn_id }
  }

  /** The turn's receipt key while it lives: during the turn and `turns.retention_ms` after it. */
  verifyReceipt (turnId: string): ReceiptKey | null {
    const active = this.active.get(turnId)
    if (active !== undefined) return active.receipts
    return this.receiptKeys.get(turnId)
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
