/**
 * One turn while it runs on this instance: its phase, its cancellation token, its event sequence,
 * its ownership (turn-ownership.ts), its timeout, its checkpoints, and the finish that persists
 * the outcome before the terminal event goes out.
 *
 * Phases, each entered by one method:
 *   starting ─begin()→ running ─requestPark()→ parking ─park()→ parked
 *   running / parking ─(the loop ends)→ finishing ─→ finished
 * A turn is `starting` from its registration until its loop starts; `parked` and `finished` are
 * its ends on this instance (a parked turn is resumed by the next start, or another instance).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { TurnEvent } from '../../schemas/events.js'
import type { SessionGrants } from '../approval/grants.js'
import type { SteerAccepted } from '../../schemas/steering.js'
import { ERRORS, TollgateError } from '../core/errors.js'
import type { BusEnvelope } from '../bus/bus.js'
import type { IsoClock } from '../core/clock.js'
import type { Config } from '../core/config.js'
import { scrubText } from '../core/security/redact.js'
import { StreamedTextScrubber } from '../core/security/text-stream.js'
import { tenantOf } from '../core/tenancy.js'
import { TERMINAL_TURN_STATUSES, type SessionRecord, type Store, type TurnRecord } from '../store/store.js'
import type { TurnJournal } from '../journal/journal.js'
import type { ResolvedAgentExecution, TurnState } from '../turn/context.js'
import { CancelReason, runToolLoop, type LoopDurability, type TurnOutcome } from '../turn/loop.js'
import { SteeringQueue } from '../turn/steering.js'
import type { ConnectionRegistry } from './connections.js'
import { TurnOwnership } from './turn-ownership.js'

/** The cancellation reason of a turn that ran out of `turns.turn_timeout_ms`. */
export class TurnTimeout extends CancelReason {}

/** Where a running turn is in its life on this instance (see the diagram above). */
export type TurnPhase = 'starting' | 'running' | 'parking' | 'parked' | 'finishing' | 'finished'

/**
 * Whether a turn in this phase holds its cluster-wide slot, which its instance renews: the slot is
 * given back as the turn finishes or parks (`TurnEnding.freeSlot`), and a renewal after that must
 * not take it again.
 */
const HOLDS_SLOT: Record<TurnPhase, boolean> = {
  starting: true, running: true, parking: true, parked: false, finishing: false, finished: false
}

/** A phase change the running turn's own code never asks for: a bug, not a state of the turn. */
export class IllegalTurnTransition extends Error {
  constructor (readonly from: TurnPhase, readonly to: TurnPhase) {
    super(`a running turn cannot go from ${from} to ${to}`)
    this.name = 'IllegalTurnTransition'
  }
}

/** What the service gives back when a turn stops running here. */
export interface TurnEnding {
  /**
   * The principal's slot shared with the other instances (Redis). Awaited before the terminal
   * event goes out: a client that starts its next turn on another instance the moment it sees
   * this one end must not be refused for the slot this one still held. Never rejects.
   */
  freeSlot: () => Promise<void>
  /** The rest, once the outcome is out: the session, this instance's counts, the event buffer's retention. */
  release: () => void
}

/** How a running turn begins: a new turn's owner, or a resumed turn's place in its log and its steering queue. */
export interface RunningTurnOptions {
  /** Connection whose closing cancels the turn (unless detached). */
  ownerConnection: string | null
  detach: boolean
  /** The seq of the turn's last event (a resumed turn goes on after its log). */
  lastSeq?: number
  /** A resumed turn's queue, rebuilt from its log. */
  steering?: SteeringQueue
}

/** What a running turn needs from the service around it. */
export interface TurnHost {
  config: Config
  store: Store
  /** Where the turn's events go: stored (where the store keeps an event log), then published on the bus. */
  journal: TurnJournal
  connections: ConnectionRegistry
  /** What the turn's events are stamped with (one clock for the service's turns). */
  clock: IsoClock
  /** An unref'd timer the service clears at shutdown. */
  later (ms: number, fn: () => void): NodeJS.Timeout
  clear (timer: NodeJS.Timeout): void
}

export class RunningTurn {
  readonly controller = new AbortController()
  readonly done: Promise<TurnRecord>
  /** Who owns the turn; only its own methods change that. */
  readonly ownership: TurnOwnership
  /** Messages a person adds while the turn runs (a resumed turn's are rebuilt from its log). */
  readonly steering: SteeringQueue
  private phaseNow: TurnPhase = 'starting'
  private seqNow: number
  /** The owner's tenant, which routes every envelope of the turn to session subscribers. */
  private readonly tenant: string
  /** At a place a stopping gateway may leave it (durable turns say where their loop is: `parksWhen`). */
  private parkProbe: (() => boolean) | null = null
  /** The model's streamed text is scrubbed on its way out; a piece may wait for the next one (text-stream.ts). */
  private readonly text = new StreamedTextScrubber()
  /** The model's streamed reasoning, scrubbed the same way as its own stream. */
  private readonly reasoning = new StreamedTextScrubber()
  private readonly disposers: Array<() => void> = []
  private resolveDone!: (record: TurnRecord) => void

  constructor (
    private readonly host: TurnHost,
    readonly record: TurnRecord,
    options: RunningTurnOptions
  ) {
    this.seqNow = options.lastSeq ?? 0
    this.tenant = tenantOf(record.owner)
    this.steering = options.steering ?? new SteeringQueue(host.config.turns.max_steering_messages)
    this.ownership = new TurnOwnership(host, {
      record,
      graceMs: host.config.turns.disconnect_grace_ms,
      cancel: (reason) => { this.controller.abort(new CancelReason(reason)) }
    }, options.ownerConnection, options.detach)
    this.done = new Promise((resolve) => { this.resolveDone = resolve })
  }

  get phase (): TurnPhase {
    return this.phaseNow
  }

  /** Its cluster-wide slot is still its own (renewed by its instance). */
  get holdsSlot (): boolean {
    return HOLDS_SLOT[this.phaseNow]
  }

  /** The seq of the turn's last event. */
  get seq (): number {
    return this.seqNow
  }

  /** Parked: nothing more is published or saved; the last checkpoint stands, and the record as stored. */
  get parked (): boolean {
    return this.phaseNow === 'parked'
  }

  /** The gateway is stopping: the loop stops at its next safe point (durable turns). */
  get parkRequested (): boolean {
    return this.phaseNow === 'parking' || this.phaseNow === 'parked'
  }

  /** A durable turn says, once, when its loop is at a place a stopping gateway may leave it. */
  parksWhen (probe: () => boolean): void {
    if (this.parkProbe !== null) throw new Error('a running turn\'s park probe is set once')
    this.parkProbe = probe
  }

  /** At a place a stopping gateway may leave it: always, for a turn without checkpoints. */
  get atSafePoint (): boolean {
    return this.parkProbe?.() ?? true
  }

  /** The loop starts. A stop asked before it did stands: the loop parks at its first safe point. */
  begin (): void {
    if (this.phaseNow === 'parking' || this.phaseNow === 'parked') return
    this.move(['starting'], 'running')
  }

  /**
   * The gateway is stopping: the loop stops at its next safe point. A turn that is ending already
   * ends on its own (there is nothing to park), and asking twice is asking once.
   */
  requestPark (): void {
    if (this.phaseNow === 'starting' || this.phaseNow === 'running') this.phaseNow = 'parking'
  }

  /**
   * The gateway stops with the turn unfinished: it publishes and saves nothing more, its timers
   * and owner binding go. A turn that ended meanwhile is left to write its end (parking it would
   * cut that short).
   */
  park (): void {
    if (this.phaseNow === 'finishing' || this.phaseNow === 'finished') return
    if (this.phaseNow !== 'parked') this.move(['parking'], 'parked')
    // Also when parked already: a start under way when the stop came arms its timeout and owner
    // binding after that, and they go when its loop comes back parked.
    this.dispose()
  }

  private move (from: readonly TurnPhase[], to: TurnPhase): void {
    if (!from.includes(this.phaseNow)) throw new IllegalTurnTransition(this.phaseNow, to)
    this.phaseNow = to
  }

  private dispose (): void {
    for (const dispose of this.disposers) dispose()
    this.ownership.dispose()
  }

  /**
   * Queues a message for the turn's next model call and records it as a `user.message` event,
   * answered once that event is stored: a turn parked for a restart finds it in its log.
   */
  async steer (message: string, sender: string): Promise<SteerAccepted> {
    if (this.parked) throw new TollgateError('SHUTTING_DOWN')
    if (this.controller.signal.aborted || TERMINAL_TURN_STATUSES.has(this.record.status)) throw new TollgateError('STEERING_CLOSED')
    const { n, queued } = this.steering.offer(message)
    // The history gets the words as written; the event, like all rendered text, is scrubbed.
    // Who sent it is recorded only when it is not the turn's own principal: the followers see who steered.
    this.emit({ kind: 'user.message', message: scrubText(message), n, ...(sender === this.record.owner ? {} : { sent_by: sender }) })
    const seq = this.seq
    await this.written()
    return { turn_id: this.record.turn_id, seq, n, queued }
  }

  emit (event: TurnEvent): void {
    if (this.parked) return
    if (event.kind === 'text.delta') {
      this.releaseReasoning()
      const shown = this.text.push(event.text)
      if (shown !== '') this.host.journal.append(this.sequence({ kind: 'text.delta', text: shown }))
      return
    }
    if (event.kind === 'reasoning.delta') {
      this.releaseText()
      const shown = this.reasoning.push(event.text)
      if (shown !== '') this.host.journal.append(this.sequence({ kind: 'reasoning.delta', text: shown }))
      return
    }
    this.releaseText()
    this.releaseReasoning()
    this.host.journal.append(this.sequence(event))
  }

  /** Whatever streamed text is still held goes out before the next other event: that text is over. */
  private releaseText (): void {
    const rest = this.text.end()
    if (rest !== '') this.host.journal.append(this.sequence({ kind: 'text.delta', text: rest }))
  }

  private releaseReasoning (): void {
    const rest = this.reasoning.end()
    if (rest !== '') this.host.journal.append(this.sequence({ kind: 'reasoning.delta', text: rest }))
  }

  /**
   * Gives the turn's next event its seq (and the record its progress) without publishing it: for
   * an event written in the same transaction as the record (`turn.started` and, for a durable
   * turn, its first `iteration`; the terminal event).
   */
  sequence (event: TurnEvent, ts: string = this.host.clock.now()): BusEnvelope {
    this.seqNow += 1
    const { record } = this
    record.last_seq = this.seqNow
    record.updated_at = ts
    if (event.kind === 'iteration') record.iterations = event.n
    return { turn_id: record.turn_id, session_id: record.session_id, tenant: this.tenant, seq: this.seqNow, ts, event }
  }

  /** `stored`: written to the store's event log already, with every earlier event of the turn. */
  publish (envelope: BusEnvelope, stored: boolean): void {
    if (stored) this.host.journal.appendStored(envelope)
    else this.host.journal.append(envelope)
  }

  /**
   * Saves the record as it stands, with the turn's events published so far and never ahead of
   * them (TurnJournal.saveTurn). Called where other instances must see it (an approval starts
   * waiting, or was decided); tool calls and iterations are left to the event log
   * (cluster/turn-log.ts). Resolves once stored, or once a failure is logged.
   */
  async saveRecord (log: Logger): Promise<void> {
    if (this.parked) return
    try {
      await this.host.journal.saveTurn(this.record)
    } catch (err) {
      log.warn({ err }, 'could not save the turn record')
    }
  }

  /**
   * Where the loop can continue after a restart, written with the events published in this
   * synchronous run (the same transaction): `doc` is the service's checkpoint document.
   */
  stageCheckpoint (doc: string): void {
    if (this.parked) return
    this.host.journal.checkpoint({ turn_id: this.record.turn_id, seq: this.seqNow, doc })
  }

  /** Resolves once the turn's events so far are stored. */
  async written (): Promise<void> {
    await this.host.journal.written()
  }

  /** The timeout counts from the turn's start, also for a turn resumed after a restart. */
  armTimeout (): void {
    const ms = this.host.config.turns.turn_timeout_ms
    if (ms <= 0) return
    const left = Math.max(0, ms - (Date.now() - Date.parse(this.record.created_at)))
    const timer = this.host.later(left, () => { this.controller.abort(new TurnTimeout('turn timeout')) })
    this.disposers.push(() => { this.host.clear(timer) })
  }

  /**
   * Runs the tool loop to its outcome, frees the turn's cluster-wide slot, records and publishes
   * the outcome (finish), then lets the service release the turn's session and counts before
   * anyone waiting for its end wakes up.
   */
  async run (
    exec: ResolvedAgentExecution, state: TurnState, session: SessionRecord, grants: SessionGrants, channel: string, ending: TurnEnding,
    durability: LoopDurability = {}
  ): Promise<void> {
    const { record } = this
    const correlation = { turn_id: record.turn_id, session_id: record.session_id, agent: record.agent, channel }
    exec.observer.record({
      kind: 'turn_start', provider: exec.model.provider.name, provider_kind: exec.model.provider.kind, model: exec.model.model,
      ...correlation
    })
    const started = performance.now()
    this.begin()
    let outcome: TurnOutcome
    try {
      outcome = await runToolLoop(exec, state, durability)
    } catch (err) {
      state.log.error({ err }, 'turn loop crashed')
      outcome = { status: 'failed', code: 'INTERNAL', message: ERRORS.INTERNAL.message }
    }
    this.steering.close()
    if (outcome.status === 'parked' || this.parked) {
      // Parked for a restart: no terminal event, the record stays running, the checkpoint resumes it.
      this.park()
      await ending.freeSlot()
      ending.release()
      state.log.info({ step: durability.checkpoints?.cursor.step }, 'parked the turn for a restart')
      this.resolveDone(this.record)
      return
    }
    // A stop asked while the loop was ending (parking, not parked yet) lets it finish.
    this.move(['running', 'parking'], 'finishing')
    outcome = this.settle(outcome)
    await ending.freeSlot()
    await this.finish(session, state, outcome, grants)
    this.move(['finishing'], 'finished')
    ending.release()
    exec.observer.record({
      kind: 'turn_end', status: record.status, duration_ms: performance.now() - started, iterations: record.iterations,
      ...(outcome.status === 'failed' ? { code: outcome.code } : {}), ...correlation
    })
    this.resolveDone(this.record)
  }

  /** The failure a cancelled outcome really was when the turn's own timeout cancelled it. */
  private settle (outcome: Exclude<TurnOutcome, { status: 'parked' }>): Exclude<TurnOutcome, { status: 'parked' }> {
    if (outcome.status === 'cancelled' && this.controller.signal.reason instanceof TurnTimeout) {
      return { status: 'failed', code: 'TURN_TIMEOUT', message: `turn exceeded ${this.host.config.turns.turn_timeout_ms} ms` }
    }
    return outcome
  }

  /**
   * Records the outcome on the turn and its session, persists both, then publishes the terminal
   * event and releases the turn's timers and owner binding.
   */
  private async finish (
    session: SessionRecord, state: TurnState, outcome: Exclude<TurnOutcome, { status: 'parked' }>, grants: SessionGrants
  ): Promise<void> {
    const { record } = this
    record.status = outcome.status
    let terminal: TurnEvent
    // Every terminal event carries what the providers reported, whatever ended the turn.
    const usage = record.usage === undefined ? {} : { usage: record.usage }
    if (outcome.status === 'completed') {
      // Rendered scrubbed like the streamed text; the session history keeps the model's own words.
      record.final_text = scrubText(outcome.finalText)
      terminal = { kind: 'turn.completed', final_text: record.final_text, ...usage }
    } else if (outcome.status === 'cancelled') {
      terminal = { kind: 'turn.cancelled', reason: outcome.reason, ...usage }
    } else {
      // Failure text can quote provider or tool errors, so it is rendered scrubbed.
      const message = scrubText(outcome.message)
      record.error = { code: outcome.code, message }
      terminal = { kind: 'turn.failed', code: outcome.code, message, ...usage }
    }
    session.history = state.history
    session.always_allowed = grants.list()
    this.releaseReasoning()
    this.releaseText()
    // Persisted before the terminal event goes out: whoever sees it, on any instance, and then
    // reads the turn or starts the session's next turn finds the finished state in the store.
    const closing = this.sequence(terminal)
    session.updated_at = record.updated_at
    // On SQLite the save joins the journal's end-of-tick write with the terminal event (turns
    // ending in one tick share it), which then goes out with that group.
    const joined = this.host.journal.finish({ turn: record, session }, closing)
    if (joined !== null) {
      await joined
    } else {
      // Where the journal stores events, the save carries the terminal event and whatever of the
      // turn it has not written yet (the answer's text of this tick): one transaction.
      const unwritten = this.host.journal.unwritten(record.turn_id)
      let stored = false
      try {
        await this.host.store.saveTurnAndSession(record, session, unwritten === null ? [] : [...unwritten, closing])
        stored = unwritten !== null
      } catch (err) {
        state.log.error({ err }, 'could not persist the finished turn')
      }
      this.publish(closing, stored)
    }
    this.dispose()
  }
}

/** How often a stopping gateway looks whether its turns reached a place to park. */
const PARK_POLL_MS = 20

/**
 * Stops the turns of a closing gateway and waits until each has. `park` (durable turns): running
 * tools get `graceMs` to finish, then every turn stops where its last checkpoint holds it, with no
 * terminal event. Otherwise each is cancelled.
 */
export async function stopTurns (
  running: RunningTurn[], options: { park: boolean, graceMs: number, ended: (turn: RunningTurn) => boolean }
): Promise<void> {
  if (options.park) {
    for (const a of running) a.requestPark()
    const parked = (): boolean => running.every((a) => options.ended(a) || a.atSafePoint)
    const deadline = Date.now() + options.graceMs
    while (!parked() && Date.now() < deadline) await sleep(PARK_POLL_MS)
    for (const a of running) a.park()
  }
  for (const a of running) a.controller.abort(new CancelReason('server shutting down'))
  await Promise.all(running.map(async (a) => await a.done))
}
