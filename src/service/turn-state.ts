/**
 * The execution context (src/turn/context.ts's resolved agent, model, tools and knobs) and the
 * engine state of a new turn (src/turn/context.ts's TurnState), wired to its RunningTurn:
 * events go out through the turn's sequence, approvals through the broker with the turn's
 * backchannel test, and the record keeps its tool calls (in model order), approval audit,
 * pending approvals and usage as they happen.
 */
import type { AuditRecorder } from './audit-recorder.js'
import type { PermissionBook } from '../approval/permission-book.js'
import type { Logger } from 'pino'
import type { TurnEvent } from '../../schemas/events.js'
import type { TurnRequest } from '../../schemas/turn.js'
import type { ApprovalBroker } from '../approval/broker.js'
import type { SessionGrants } from '../approval/grants.js'
import type { Config } from '../core/config.js'
import { TollgateError } from '../core/errors.js'
import { sessionKey, tenantOf } from '../core/tenancy.js'
import type { SpendLedger } from '../store/spend-ledger.js'
import type { CallSpending } from '../turn/spending.js'
import { turnSpending } from './budgets.js'
import type { Observer } from '../observe/observer.js'
import type { ChatMessage, ModelProvider } from '../providers/types.js'
import type { ReceiptKey } from '../receipts/keys.js'
import type { SessionRecord, TurnRecord } from '../store/store.js'
import type { WorkspaceLayout } from '../tools/builtin/workspace-layout.js'
import type { ToolCatalog } from '../tools/catalog.js'
import type { McpToolSource } from '../tools/contract.js'
import type { ToolHooks } from '../turn/hooks.js'
import type { ResolvedAgentExecution, TurnState } from '../turn/context.js'
import { createTurnState } from '../turn/state.js'
import { resolveAgent, resolveTurnContext } from './agent-resolution.js'
import { trimHistory } from '../turn/history.js'
import { UsageTally } from '../turn/usage.js'
import type { TurnCheckpointer } from './checkpoint.js'
import { insertCall } from '../cluster/turn-log.js'
import type { ConnectionRegistry } from './connections.js'
import type { RemoteTurns } from './remote.js'
import type { RunningTurn } from './running-turn.js'

export interface ExecutionDeps {
  config: Config
  catalog: ToolCatalog
  providers: ReadonlyMap<string, ModelProvider>
  observer: Observer
  hooks: ToolHooks
  mcp?: McpToolSource
  workspaces: WorkspaceLayout
  permissions?: PermissionBook
  /** The tenants' audit chains, fed from each turn's observer records. */
  audit?: AuditRecorder
}

export interface NewTurn {
  request: TurnRequest
  session: SessionRecord
  grants: SessionGrants
  /** Transport label for audit and observer records. */
  channel: string
  tenant: string
  /** The turn's receipt key, derived when asked: only an agent that signs receipts asks. */
  receipts: () => ReceiptKey
}

/** The agent, model, scoped tools and knobs the turn runs with, resolved once at its start. */
export function resolveExecution (deps: ExecutionDeps, turn: NewTurn): ResolvedAgentExecution {
  const { request, session } = turn
  let workspaceDir: string | undefined
  return resolveTurnContext({
    config: deps.config,
    agentName: session.agent,
    catalog: deps.catalog,
    providers: deps.providers,
    observer: deps.audit === undefined ? deps.observer : deps.audit.observerFor(deps.observer, turn.tenant),
    hooks: deps.hooks,
    grants: turn.grants,
    channel: turn.channel,
    ...(request.tools === undefined ? {} : { narrowing: request.tools }),
    ...(deps.mcp === undefined ? {} : { mcp: deps.mcp }),
    message: request.message,
    ...(request.approval_timeout_ms === undefined ? {} : { approvalTimeoutMs: request.approval_timeout_ms }),
    ...(request.client_tools === undefined ? {} : { clientTools: request.client_tools }),
    receiptGenerator: turn.receipts,
    ...(deps.permissions === undefined ? {} : { permissions: deps.permissions }),
    // Checked (and made) once per turn, by its first tool that asks.
    workspaceDir: () => (workspaceDir ??= deps.workspaces.dirFor(turn.tenant, session.session_id)),
    workspaceOwner: deps.workspaces.ownerFor(turn.tenant),
    tenant: turn.tenant
  })
}

export interface TurnStateDeps {
  config: Config
  /** The store's spend ledger: budgets are kept there. */
  spend: SpendLedger
  log: Logger
  broker: ApprovalBroker
  connections: ConnectionRegistry
  remote: RemoteTurns
}

/** Whether someone can answer the turn's approvals now: its owner socket, or a watcher on any instance. */
async function hasBackchannel (deps: TurnStateDeps, running: RunningTurn): Promise<boolean> {
  const { record } = running
  const ownerConnection = running.ownership.connection
  if (ownerConnection !== null) {
    const owner = deps.connections.get(ownerConnection)
    if (owner !== undefined && !owner.closed && owner.kind !== 'http' && owner.canAnswer) return true
  }
  if (deps.connections.watchedBy(record.owner, record.turn_id, record.session_id)) return true
  return await deps.remote.watching(record)
}

/** The history a turn starts from: the session's, bounded, then the user's message. */
export function startingHistory (config: Config, agent: string, session: SessionRecord, message: string): ChatMessage[] {
  const { runtime } = resolveAgent(config, agent)
  return trimHistory([...session.history, { role: 'user', content: message }], runtime.max_history_messages)
}

/** The turn's budgets, when any applies. */
function spendingOf (deps: TurnStateDeps, record: TurnRecord, request: TurnRequest): { spending?: CallSpending } {
  const tenant = tenantOf(record.owner)
  const spending = turnSpending({
    budgets: deps.config.budgets,
    ledger: deps.spend,
    tenant,
    session: sessionKey(tenant, record.session_id),
    turnId: record.turn_id,
    ...(request.budget_usd === undefined ? {} : { requestedUsd: request.budget_usd })
  })
  return spending === undefined ? {} : { spending }
}

/** A durable turn's checkpointing, and for a resumed one where its history and usage stood. */
export interface DurableState {
  checkpointer: TurnCheckpointer
  history?: ChatMessage[]
}

export function assembleTurnState (
  deps: TurnStateDeps, running: RunningTurn, session: SessionRecord, request: TurnRequest, durable: DurableState | null = null
): TurnState {
  const { record } = running
  const { turn_id: turnId, session_id: sessionId, owner } = record
  const { runtime } = resolveAgent(deps.config, record.agent)
  const history = durable?.history ?? startingHistory(deps.config, record.agent, session, request.message)
  const emit = (event: TurnEvent): void => { running.emit(event) }
  const usage = durable?.checkpointer.usage ?? new UsageTally()
  // Operators' answers whose decision the turn is about to store: each is acknowledged only once it is.
  const answers = new Map<string, { resolve: () => void, reject: (err: unknown) => void }>()
  const state: TurnState = createTurnState({
    turnId,
    sessionId,
    history,
    signal: running.controller.signal,
    steering: running.steering,
    interactive: request.interactive !== false,
    log: deps.log,
    logBindings: { turn_id: turnId, session_id: sessionId, agent: record.agent },
    loopDetection: runtime.loop_detection,
    tenant: tenantOf(owner),
    ...spendingOf(deps, record, request),
    ...(durable === null ? {} : { holding: () => durable.checkpointer.holding() }),
    emit,
    approvals: deps.broker.channelFor({
      turnId,
      sessionId,
      owner,
      hasBackchannel: async () => await hasBackchannel(deps, running),
      emit,
      onPending: (requestId, request) => {
        // A parked turn's wait is not over: its request stays listed, as stored, for the restart.
        if (running.parked) return
        // A turn asks its calls one at a time in model order (approval makes a batch sequential): appending keeps it.
        // A request reopened after a restart is listed already.
        const others = record.pending_approvals.filter((p) => p.request_id !== requestId)
        if (request !== null) {
          record.pending_approvals = [...others, request]
          // Saved while it waits: GET /v1/approvals and GET /v1/turns/:id on every instance list it.
          void running.saveRecord(state.log)
          durable?.checkpointer.approvalWaiting(request)
          return
        }
        // Saved with the decision's audit entry (recordApproval, right after): one save.
        record.pending_approvals = others
      },
      decided: async (requestId) => { await new Promise<void>((resolve, reject) => { answers.set(requestId, { resolve, reject }) }) }
    }),
    // Slots settle out of order (preparation fills some before others run); the record keeps model
    // order. Not saved: the call's events are in the log, which recovery and remote reads rebuild it from.
    recordToolCall: (r) => {
      if (running.parked) return
      // A call settled before a restart may be recorded already (read back from the log).
      const seen = record.tool_calls.findIndex((c) => c.call_id === r.call_id)
      if (seen !== -1) record.tool_calls.splice(seen, 1)
      insertCall(record.tool_calls, r)
    },
    // Every decision is saved: the audit entry (who, through which channel) is in no event. It is
    // written with the decision's `approval.resolved` (published just before), in one transaction
    // on SQLite, so the log and the audit never disagree on what decided.
    recordApproval: (e) => {
      const answer = answers.get(e.request_id)
      answers.delete(e.request_id)
      // Parking ends a wait with `cancelled` in memory only; the restart asks again, so an answer
      // that came too late for it is refused rather than acknowledged and lost.
      if (running.parked) {
        answer?.reject(new TollgateError('SHUTTING_DOWN'))
        return
      }
      // An answer read back from the log after a restart was audited when it was given.
      if (answer === undefined && record.approvals.some((a) => a.request_id === e.request_id)) return
      // One entry per request, the decision that decided it.
      record.approvals = [...record.approvals.filter((a) => a.request_id !== e.request_id), e]
      void running.saveRecord(state.log).then(() => answer?.resolve())
    },
    // Kept on the record as it grows (a running turn's GET shows it); stored with the next save.
    recordCallUsage: (u, cost, provider) => {
      if (provider !== undefined) record.provider = provider
      usage.add(u, cost)
      const current = usage.current()
      if (current !== undefined) record.usage = current
    }
  })
  return state
}
