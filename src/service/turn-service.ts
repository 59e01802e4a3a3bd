/**
 * Turn service: the one object routes and transports call. It starts a turn (start-turn.ts, with
 * admission.ts and turn-state.ts) or resumes an orphaned one (resume-turn.ts), each run as a
 * RunningTurn (running-turn.ts), and answers ownership-checked reads, cancels and approval
 * answers, here or, through the control plane, on the instance that runs the turn (remote.ts).
 * Listings live in listing.ts.
 */
import type { Logger } from 'pino'
import type { SteerAccepted } from '../../schemas/steering.js'
import type { TurnRequest } from '../../schemas/turn.js'
import type { ApprovalBroker, OperatorAnswer } from '../approval/broker.js'
import { hasScope, principalKey, type Principal } from '../auth/principal.js'
import { IsoClock } from '../core/clock.js'
import type { EventBus, ReplayResult } from '../bus/bus.js'
import { readTurnLog, summarizeLog, withLoggedProgress } from '../cluster/turn-log.js'
import type { TurnSlots } from '../cluster/turn-slots.js'
import { runningTurnsPolicy } from '../core/config.js'
import { TollgateError } from '../core/errors.js'
import type { TurnJournal } from '../journal/journal.js'
import { tenantOf } from '../core/tenancy.js'
import type { ReceiptKey } from '../receipts/keys.js'
import type { ReceiptKeyring } from '../receipts/keyring.js'
import type { SessionRecord, Store, TurnRecord } from '../store/store.js'
import type { ToolCatalog } from '../tools/catalog.js'
import { CancelReason } from '../turn/loop.js'
import { Admission } from './admission.js'
import type { ConnectionRegistry } from './connections.js'
import { TurnListing } from './listing.js'
import { RemoteTurns } from './remote.js'
import { RetentionQueue } from './retention.js'
import { RunningTurn, stopTurns, type TurnEnding, type TurnHost } from './running-turn.js'
import { resumeTurn } from './resume-turn.js'
import { startTurn, type StartOptions, type StartScope } from './start-turn.js'
import type { ExecutionDeps, TurnStateDeps } from './turn-state.js'

export interface TurnServiceDeps extends ExecutionDeps {
  store: Store
  /** Fan-out, replay and the control plane to other instances. */
  bus: EventBus
  /** Where turns' events are stored and published, and replays filled from the store. */
  journal: TurnJournal
  connections: ConnectionRegistry
  log: Logger
  /** Routes approval questions to people; composed outside so transports share it. */
  broker: ApprovalBroker
  /** This gateway instance, as named on the bus's control plane. */
  instanceId: string
  /** Master keys the turns' receipt keys are derived from. */
  receipts: ReceiptKeyring
  /** Per-principal turn slots shared with the other instances (Redis bus); null: this instance's count alone. */
  slots: TurnSlots | null
}

export type { StartOptions } from './start-turn.js'

export class TurnService {
  readonly broker: ApprovalBroker
  /** The principal's pending approvals, sessions and turns. */
  readonly listing: TurnListing
  private readonly deps: TurnServiceDeps
  private readonly active = new Map<string, RunningTurn>()
  private readonly admission: Admission
  private readonly timers = new Set<NodeJS.Timeout>()
  private readonly retention: RetentionQueue
  private readonly host: TurnHost
  private readonly stateDeps: TurnStateDeps
  private readonly startScope: StartScope
  /** Cancels, approval answers and backchannel probes for turns running on another instance. */
  private readonly remote: RemoteTurns
  private closingFlag = false
  /** `shutdown.running_turns = "resume"` with an event log that stores checkpoints: turns outlive the process. */
  readonly durable: boolean

  constructor (deps: TurnServiceDeps) {
    this.deps = deps
    this.broker = deps.broker
    this.retention = new RetentionQueue(deps.config.turns.retention_ms)
    const { config, store, journal, connections, log } = deps
    this.admission = new Admission({ config, store, connections, log, active: this.active })
    this.listing = new TurnListing(store, this.active, async () => { await journal.written() })
    this.host = {
      config, store, journal, connections,
      clock: new IsoClock(),
      later: (ms, fn) => this.later(ms, fn),
      clear: (timer) => { clearTimeout(timer); this.timers.delete(timer) }
    }
    this.remote = new RemoteTurns({
      bus: deps.bus,
      instanceId: deps.instanceId,
      peers: async () => await deps.store.liveInstances(),
      timeoutMs: deps.config.cluster.control_timeout_ms,
      log: deps.log
    }, { active: this.active, broker: this.broker, connections })
    this.stateDeps = { config, spend: store.spend, log, broker: this.broker, connections, remote: this.remote }
    this.durable = runningTurnsPolicy(config, store.durable) === 'resume' && journal.keepsEvents
    this.startScope = {
      deps,
      stateDeps: this.stateDeps,
      host: this.host,
      admission: this.admission,
      durable: this.durable,
      register: (running) => { this.active.set(running.record.turn_id, running) },
      abandon: (record, heldSlot) => { this.abandon(record, heldSlot) },
      ending: (record) => this.ending(record)
    }
    if (config.shutdown.running_turns === 'resume' && !this.durable) {
      log.warn({ store: config.store.kind, event_log: config.store.event_log },
        'shutdown.running_turns is "resume" but turns cannot outlive this process: that needs a durable store (sqlite, postgres) with store.event_log')
    }
    deps.slots?.track(() => [...this.active.values()]
      .filter((a) => a.holdsSlot)
      .map((a) => ({ owner: a.record.owner, turnId: a.record.turn_id })))
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
      this.retention.sweep(Date.now())
      const started = await startTurn(this.startScope, principal, request, options, claim)
      return started.created ? started : { turn: await this.get(principal, started.original), created: false }
    } catch (err) {
      return { turn: await this.get(principal, await this.admission.raceWinner(claim, err)), created: false }
    }
  }

  /**
   * Continues a turn whose process stopped (an orphan of this instance's previous incarnation, or
   * of a dead instance) from its checkpoint (resume-turn.ts). False when it cannot: the caller
   * interrupts it instead. True also when another instance took it over first.
   */
  async resume (orphan: { turnId: string, instanceId: string | null }): Promise<boolean> {
    if (!this.durable) return false
    // A stopping instance leaves orphans to the next start or another instance.
    if (this.closingFlag) return true
    return await resumeTurn({
      deps: this.deps,
      stateDeps: this.stateDeps,
      host: this.host,
      receiptKeyOf: (turn) => this.receiptKeyOf(turn),
      adopt: (running) => {
        const { record } = running
        this.active.set(record.turn_id, running)
        this.admission.hold(record)
        // A resumed turn is never refused: it held its slot before the restart.
        void this.deps.slots?.acquire(record.owner, record.turn_id, Number.MAX_SAFE_INTEGER)
      },
      ending: (record) => this.ending(record)
    }, orphan)
  }

  /** Nothing ran yet: releases the slots and the session, so the client can simply retry. */
  private abandon (record: TurnRecord, heldSlot = true): void {
    this.active.delete(record.turn_id)
    this.admission.release(record)
    if (heldSlot) void this.deps.slots?.release(record.owner, record.turn_id)
  }

  /** What a turn of this instance gives back when it stops running here (running-turn.ts, `TurnEnding`). */
  private ending (record: TurnRecord): TurnEnding {
    return {
      freeSlot: async () => { await this.deps.slots?.release(record.owner, record.turn_id) },
      release: () => { this.release(record) }
    }
  }

  /** The turn has ended (its cluster-wide slot is free already): its session, counts and, after retention, its event buffer go. */
  private release (record: TurnRecord): void {
    this.active.delete(record.turn_id)
    this.admission.release(record)
    const turnId = record.turn_id
    if (!this.deps.journal.ended(turnId)) return
    // The entry closes over the id alone: closing over the record would keep every finished
    // turn's record, with its tool calls, in the heap for the whole retention.
    this.retention.add(Date.now() + this.deps.config.turns.retention_ms, () => { this.deps.bus.drop(turnId) })
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
    const active = this.active.get(turnId)
    // Ending here: its outcome is on the record while the save is under way. Answered once the turn
    // has released its session and slots, so that whoever reads "completed" can start the next one.
    if (active !== undefined) return turn.status === 'running' ? turn : await active.done
    if (turn.status !== 'running') return turn
    // Running on another instance (or on one that died and is not recovered yet): its record was
    // saved at its start and approval waits, its calls and iterations since are in its event log.
    return withLoggedProgress(turn, summarizeLog(await readTurnLog(this.deps.journal, turnId)))
  }

  /** The principal's session `sessionId` (looked up within its tenant); another principal's answers like a missing one. */
  async session (principal: Principal, sessionId: string): Promise<SessionRecord> {
    const session = await this.deps.store.getSession(principal.tenant, sessionId)
    if (session === null || session.owner !== principalKey(principal)) {
      if (session !== null) this.deps.log.warn({ audit: 'cross_principal_session', principal: principalKey(principal), session_id: sessionId }, 'refused access to a session of another principal')
      throw new TollgateError('SESSION_NOT_FOUND')
    }
    return session
  }

  async replay (principal: Principal, turnId: string, afterSeq: number): Promise<{ turn: TurnRecord, replay: ReplayResult }> {
    const turn = await this.get(principal, turnId)
    return { turn, replay: await this.deps.journal.replay(turnId, afterSeq, turn.last_seq) }
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
    running.ownership.handOver(connectionId)
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
    await this.remote.cancel(turnId, principalKey(principal), reason)
    return await this.deps.store.getTurn(turnId) ?? turn
  }

  /**
   * Steering: a message for the turn's next model call, from its principal or from a principal of
   * the same tenant holding `turns:steer` (HTTP or WS). Answered once its `user.message` event is
   * stored. A turn that has ended, or is ending, refuses it; anyone else's turn answers as missing.
   */
  async steer (principal: Principal, turnId: string, message: string): Promise<SteerAccepted> {
    if (this.closingFlag) throw new TollgateError('SHUTTING_DOWN')
    const key = principalKey(principal)
    const steerer = hasScope(principal, 'turns:steer')
    const active = this.active.get(turnId)
    if (active !== undefined && maySteer(key, steerer, active.record.owner)) return await active.steer(message, key)
    const turn = await this.steerable(principal, turnId)
    if (turn.status !== 'running') throw new TollgateError('STEERING_CLOSED')
    // Its queue lives in the process that runs it.
    try {
      return await this.remote.steer(turnId, key, message, steerer)
    } catch (err) {
      // Nobody runs it: it may have ended in the meantime.
      if (err instanceof TollgateError && err.code === 'TURN_NOT_RUNNING' && (await this.steerable(principal, turnId)).status !== 'running') {
        throw new TollgateError('STEERING_CLOSED')
      }
      throw err
    }
  }

  /** The turn as its principal sees it (get), or as a `turns:steer` holder of its tenant may: its record. */
  private async steerable (principal: Principal, turnId: string): Promise<TurnRecord> {
    const key = principalKey(principal)
    const turn = await this.findTurn(turnId)
    if (turn === null || turn.owner === key) return await this.get(principal, turnId)
    if (!maySteer(key, hasScope(principal, 'turns:steer'), turn.owner)) {
      this.deps.log.warn({ audit: 'cross_principal_turn', principal: key, turn_id: turnId }, 'refused access to a turn of another principal')
      throw new TollgateError('TURN_NOT_FOUND')
    }
    return turn
  }

  /** Operator answer from any front door (WS frame or REST), for a turn on any instance. */
  async answerApproval (principal: Principal, requestId: string, answer: Omit<OperatorAnswer, 'principal'>): Promise<{ turnId: string }> {
    const key = principalKey(principal)
    if (this.broker.isLocal(requestId)) {
      try {
        return await this.broker.answer(requestId, { ...answer, principal: key })
      } catch (err) {
        if (err instanceof TollgateError && err.code === 'APPROVAL_NOT_FOUND') {
          this.deps.log.warn({ audit: 'cross_principal_approval', principal: key, request_id: requestId }, 'refused an answer to an approval request of another principal')
        }
        throw err
      }
    }
    return await this.remote.answer(requestId, key, answer)
  }

  /**
   * The turn's receipt key, derived again from the master key its record names: the same on every
   * instance and after a restart. Null when that master key is not configured here (any more).
   */
  receiptKeyOf (turn: TurnRecord): ReceiptKey | null {
    return turn.receipt_key_id === undefined ? null : this.deps.receipts.keyFor(turn.turn_id, turn.receipt_key_id)
  }

  /**
   * Durable turns are parked: running tools get `shutdown.tool_grace_ms` to finish, then every
   * turn stops where its last checkpoint holds it (a waiting approval stays pending, a model
   * call is dropped and made again on resume), with no terminal event. Otherwise every running
   * turn is cancelled. Either way, waits until each has stopped.
   */
  async shutdown (): Promise<void> {
    this.closingFlag = true
    await stopTurns([...this.active.values()], {
      park: this.durable, graceMs: this.deps.config.shutdown.tool_grace_ms, ended: (a) => !this.active.has(a.record.turn_id)
    })
    this.remote.close()
    this.retention.close()
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
  }
}

/** Its own turn, or, with `turns:steer`, any turn of its tenant. */
function maySteer (principal: string, steerer: boolean, owner: string): boolean {
  return principal === owner || (steerer && tenantOf(principal) === tenantOf(owner))
}
