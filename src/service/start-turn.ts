/**
 * A new turn, from an admitted request to its first event: the session it runs in, its
 * execution context, its record written with `turn.started` (and the idempotency claim) in one
 * store transaction — a durable turn's engine state is made first, and its first `iteration` and
 * the checkpoint at its first model call join that transaction — then its owner, timeout and
 * engine state, and the loop started. Anything refused before the write leaves nothing behind.
 */
import type { Logger } from 'pino'
import type { TurnRequest } from '../../schemas/turn.js'
import { SessionGrants } from '../approval/grants.js'
import { principalKey, type Principal } from '../auth/principal.js'
import type { BusEnvelope } from '../bus/bus.js'
import type { CheckpointRow } from '../core/envelope.js'
import type { TurnSlots } from '../cluster/turn-slots.js'
import { TollgateError } from '../core/errors.js'
import { timeOrderedUuid } from '../core/ids.js'
import type { TurnJournal } from '../journal/journal.js'
import type { ReceiptKey } from '../receipts/keys.js'
import type { ReceiptKeyring } from '../receipts/keyring.js'
import type { IdempotencyClaim, SessionRecord, Store, TurnRecord } from '../store/store.js'
import type { Admission } from './admission.js'
import type { ConnectionRegistry } from './connections.js'
import type { ResolvedAgentExecution, TurnState } from '../turn/context.js'
import type { TurnCheckpointer } from './checkpoint.js'
import { checkpointerFor } from './resume-turn.js'
import { RunningTurn, type TurnEnding, type TurnHost } from './running-turn.js'
import { checkRequestedBudget, checkTenantBudget } from './budgets.js'
import { assembleTurnState, resolveExecution, type ExecutionDeps, type TurnStateDeps } from './turn-state.js'

export interface StartOptions {
  /** Connection whose closing cancels the turn (unless detached) and which answers approvals. */
  ownerConnection: string | null
  /** Transport label for audit and observer records. */
  channel: string
}

/** What a start needs from the turn service. */
export interface StartScope {
  deps: ExecutionDeps & {
    store: Store
    journal: TurnJournal
    log: Logger
    receipts: ReceiptKeyring
    connections: ConnectionRegistry
    slots: TurnSlots | null
  }
  stateDeps: TurnStateDeps
  host: TurnHost
  admission: Admission
  /** Turns outlive the process (checkpointed). */
  durable: boolean
  /** Registers the new turn as running here. */
  register: (running: RunningTurn) => void
  /** Nothing ran yet: releases what the turn held (its cluster slot only when `heldSlot`). */
  abandon: (record: TurnRecord, heldSlot?: boolean) => void
  /** What the turn gives back when it stops running here. */
  ending: (record: TurnRecord) => TurnEnding
}

/** The started turn, or the turn another start with the same idempotency key won the race with. */
export type StartResult = { turn: TurnRecord, created: true } | { original: string, created: false }

export async function startTurn (
  scope: StartScope, principal: Principal, request: TurnRequest, options: StartOptions, claim: IdempotencyClaim | null
): Promise<StartResult> {
  const { deps, admission } = scope
  const { config } = deps
  const owner = principalKey(principal)
  admission.checkOwnerConnection(owner, request, options.ownerConnection)
  admission.checkCapacity(owner)
  checkRequestedBudget(config.budgets, request.budget_usd)
  await checkTenantBudget(config.budgets, deps.store.spend, principal.tenant)

  const session = await admission.sessionFor(request, principal, new Date().toISOString())
  const { session_id: sessionId, agent: agentName } = session
  const grants = new SessionGrants(session.always_allowed)
  const turnId = `turn_${timeOrderedUuid()}`
  const { receipts: keyring } = deps
  // Derived (HKDF) only if the agent signs receipts; the record names the master key either way.
  const receipts = (): ReceiptKey => keyring.forNewTurn(turnId).key
  const exec = resolveExecution(deps, { request, session, grants, channel: options.channel, tenant: principal.tenant, receipts })
  // Re-checked after the awaits above: two starts may race for one session or the last slot.
  admission.checkSessionFree(sessionId, owner)
  admission.checkCapacity(owner)

  const createdAt = new Date().toISOString()
  const record: TurnRecord = {
    turn_id: turnId, session_id: sessionId, agent: agentName, owner, status: 'running', created_at: createdAt, updated_at: createdAt,
    iterations: 0, tool_calls: [], approvals: [], pending_approvals: [], last_seq: 0, receipt_key_id: keyring.currentId
  }
  const running = new RunningTurn(scope.host, record, { ownerConnection: options.ownerConnection, detach: request.detach === true })
  scope.register(running)
  admission.hold(record)
  // The local count passed; the cluster-wide one (the principal's turns on every instance) decides.
  const { slots } = deps
  if (slots !== null && !await slots.acquire(owner, turnId, config.turns.max_active_turns_per_principal)) {
    scope.abandon(record, false)
    const cap = config.turns.max_active_turns_per_principal
    throw new TollgateError('TOO_MANY_TURNS', `this principal already runs ${cap} turns across all instances; wait for one to end`)
  }
  session.turn_ids.push(turnId)
  // A session is "updated" when a turn starts in it too: listings show the active one first.
  session.updated_at = createdAt
  // Where the journal stores events, turn.started is written with the turn (one transaction) and
  // goes out the moment that write is done, without a write of its own.
  const started = running.sequence({ kind: 'turn.started', session_id: sessionId, agent: agentName })
  const archived = deps.journal.keepsEvents
  const checkpointer = scope.durable ? checkpointerFor(running, request, options.channel, principal.tenant) : null
  // A durable turn's engine state is made before its creation, so that its first iteration and
  // the checkpoint at its first model call are written in that same transaction (a commit fewer
  // per turn); its loop then starts at that model call without writing them again.
  const events: BusEnvelope[] = archived ? [started] : []
  let early: TurnState | null = null
  let first: BusEnvelope | null = null
  let checkpoint: CheckpointRow | null = null
  if (checkpointer !== null && archived) {
    early = engineState(scope, running, session, request, exec, checkpointer)
    first = running.sequence({ kind: 'iteration', n: 1 })
    events.push(first)
    early.iteration = 1
    const doc = checkpointer.first()
    if (doc !== null) checkpoint = { turn_id: turnId, seq: running.seq, doc }
  }
  let held
  try {
    held = await deps.store.createTurn(record, session, claim, events, checkpoint)
  } catch (err) {
    scope.abandon(record)
    deps.log.error({ err, turn_id: turnId }, 'could not record a new turn')
    throw new TollgateError('NOT_READY')
  }
  if (held !== null && claim !== null) {
    // Another start (here or on another instance) won this key meanwhile: nothing was written.
    scope.abandon(record)
    return { original: await admission.repeatOf(claim) ?? held.turnId, created: false }
  }
  // The owner socket claims the turn before its first event: a session subscription of that
  // socket must not deliver turn.started a second time next to the follow's replay.
  if (options.ownerConnection !== null) deps.connections.get(options.ownerConnection)?.follow?.(turnId)
  // Then, before the rest of the set-up: the owner binding, the timeout and the engine state wait.
  running.publish(started, archived)
  if (first !== null) running.publish(first, true)
  running.ownership.bind()
  running.armTimeout()

  if (checkpointer !== null) running.parksWhen(() => checkpointer.parked())
  const state = early ?? (checkpointer === null
    ? assembleTurnState(scope.stateDeps, running, session, request)
    : engineState(scope, running, session, request, exec, checkpointer))
  const durability = checkpointer === null ? {} : { checkpoints: checkpointer.loop, announced: first !== null }
  void running.run(exec, state, session, grants, options.channel, scope.ending(record), durability)
  return { turn: record, created: true }
}

/** A durable turn's engine state, with its checkpointer attached to it. */
function engineState (
  scope: StartScope, running: RunningTurn, session: SessionRecord, request: TurnRequest, exec: ResolvedAgentExecution,
  checkpointer: TurnCheckpointer
): TurnState {
  const state = assembleTurnState(scope.stateDeps, running, session, request, { checkpointer })
  checkpointer.knobs.history_base = state.history.length
  checkpointer.attach(exec, state)
  return state
}
