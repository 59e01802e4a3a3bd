/**
 * The journal of a store that keeps an event log: every event is written to the store's event
 * log before the bus publishes it, and a replay is answered from the store when the bus no longer
 * can: after a restart (the memory bus starts empty), after Redis lost its streams, or past the
 * bus's per-turn bound.
 *
 * Group commit: events appended in one tick of the event loop (a synchronous run and the promise
 * reactions it sets off, or the I/O callbacks of one poll phase, across turns) are collected and
 * flushed together at the end of the tick (setImmediate) — written to the log in one transaction,
 * then handed to the bus in order. A round of tool calls that answer at once is one group; a call
 * that waits on I/O ends the tick, so its `tool_call` goes out before it runs. Streamed text alone
 * gathers for DELTA_WINDOW_MS first (decision 0273). With an asynchronous store (PostgreSQL),
 * which subscribers never wait for, the group goes out in a microtask instead, before any promise
 * reaction queued after the append: a write in flight already batches whatever queues behind it,
 * and fan-out is not held back — except behind a group that carries a durable turn's checkpoint,
 * which waits for its write.
 *
 * A caller that writes a turn's events in its own transaction (the turn's creation with its
 * `turn.started`, and a durable turn's first `iteration`; with an asynchronous store, its final save with its terminal event and whatever
 * of it still waits here — see `unwritten`) appends them with `appendStored`: they go out at once, never
 * written twice, so the reply that follows (`turn.accepted`, a cancel's answer, `?wait=true`)
 * follows them too. With a synchronous store a turn's final save joins the group instead
 * (`finish`): the turns ending in one tick share its commit. So does a running turn's record
 * saved at an approval's wait or decision (`saveTurn`); with an asynchronous store it follows
 * the group's write. Either way a stored record never claims an event the log does not hold.
 */
import type { Logger } from 'pino'
import type { ControlPlane, EventLog, ReplayResult } from '../bus/bus.js'
import type { BusEnvelope, CheckpointRow } from '../core/envelope.js'
import { isDelta } from '../store/delta-runs.js'
import type { FinishedTurn, Store, TurnRecord } from '../store/store.js'
import { EventLogWriter } from './event-writer.js'
import type { TurnJournal } from './journal.js'
import { replayFilled, type ReplaySources } from './replay.js'

export interface StoredJournalOptions {
  /**
   * Where events go once stored: fan-out and replay. `shared`: other gateway instances share it
   * (Redis), and replay finished turns from it.
   */
  bus: EventLog & Pick<ControlPlane, 'shared'>
  store: Store
  log: Logger
  /** Upper bound of one replay answered from the store. */
  maxEventsPerTurn: number
  maxBuffered: number
  /** How long streamed text gathers before it is written (DELTA_WINDOW_MS by default; tests widen it). */
  deltaWindowMs?: number
  /** Runs between a group's write and its fan-out (the crash test's hook); nothing by default. */
  afterGroupWrite?: (group: readonly BusEnvelope[]) => void
}

// How long a group with a checkpoint is held back from clients while an asynchronous store writes it.
const CHECKPOINT_HOLD_MS = 5000

/**
 * How long a group of nothing but streamed text (`text.delta`, `reasoning.delta`) may gather more
 * before a synchronous store writes it. Under load a token arrives in every I/O callback, so the
 * end of each tick would commit one or two deltas; a 2 ms window makes it one commit for every
 * stream's tokens of that window (decision 0273). Any other event ends the window at once, so
 * the first event, tool calls, approvals and the terminal event go out as before.
 */
export const DELTA_WINDOW_MS = 2

interface RecordSave {
  turn: TurnRecord
  resolve: () => void
  reject: (err: unknown) => void
}

export class StoredJournal implements TurnJournal {
  readonly keepsEvents = true
  private readonly bus: EventLog & Pick<ControlPlane, 'shared'>
  private readonly store: Store
  private readonly writer: EventLogWriter
  /** What a replay reads: the bus's copy, then the store's. */
  private readonly sources: ReplaySources
  private readonly afterGroupWrite: ((group: readonly BusEnvelope[]) => void) | undefined
  /** Published, not yet written nor fanned out. */
  private group: BusEnvelope[] = []
  private flushQueued = false
  /** A group of deltas only is gathering (DELTA_WINDOW_MS); null when no window is open. */
  private deltaWindow: NodeJS.Timeout | null = null
  private readonly deltaWindowMs: number
  /** End of the tick for a store that writes synchronously (SQLite); a microtask otherwise. */
  private readonly queueFlush: (flush: () => void) => void
  /** Checkpoints taken in this tick, written with its group. */
  private checkpoints: CheckpointRow[] = []
  /**
   * Groups waiting for fan-out, in order: one carrying a checkpoint waits until an asynchronous
   * store has it, and every group after it waits behind it.
   */
  private held: Array<{ group: BusEnvelope[], ready: boolean }> = []
  /** Callers of `written` waiting for the group queued for the end of this tick to be written. */
  private flushWaiters: Array<() => void> = []
  /** Final saves of turns that ended in this tick, written with its group (a synchronous store). */
  private finished: Array<{ save: FinishedTurn, done: () => void }> = []
  /** Records of running turns saved in this tick, written with its group (a synchronous store). */
  private records: RecordSave[] = []
  private readonly log: Logger

  constructor (options: StoredJournalOptions) {
    this.bus = options.bus
    this.queueFlush = options.store.appendEventsNow === undefined ? queueMicrotask : setImmediate
    this.store = options.store
    this.log = options.log
    this.sources = {
      bus: options.bus, store: options.store, maxEvents: options.maxEventsPerTurn,
      settled: async (ms) => { await this.writer.flush(ms) }
    }
    this.afterGroupWrite = options.afterGroupWrite
    this.deltaWindowMs = options.deltaWindowMs ?? DELTA_WINDOW_MS
    this.writer = new EventLogWriter({ store: options.store, log: options.log, maxBuffered: options.maxBuffered, retryMs: 500 })
  }

  append (envelope: BusEnvelope): void {
    this.group.push(envelope)
    if (isDelta(envelope) && this.queueFlush === setImmediate) this.openDeltaWindow()
    else this.queueGroupFlush()
  }

  private openDeltaWindow (): void {
    if (this.flushQueued || this.deltaWindow !== null) return
    this.deltaWindow = setTimeout(this.windowFlush, this.deltaWindowMs)
  }

  private readonly windowFlush = (): void => {
    this.deltaWindow = null
    if (!this.flushQueued) this.flush()
  }

  checkpoint (row: CheckpointRow): void {
    this.checkpoints.push(row)
    this.queueGroupFlush()
  }

  private queueGroupFlush (): void {
    if (this.flushQueued) return
    this.flushQueued = true
    this.queueFlush(this.queuedFlush)
  }

  /** It and every earlier event of its turn are in the store: those still waiting here go out now, ahead of it. */
  appendStored (envelope: BusEnvelope): void {
    const turnId = envelope.turn_id
    const earlier = this.group.filter((e) => e.turn_id === turnId)
    if (earlier.length > 0) this.group = this.group.filter((e) => e.turn_id !== turnId)
    const out = [...earlier, envelope]
    if (this.held.length > 0) {
      // Behind the groups held for a checkpoint's write, in order.
      this.held.push({ group: out, ready: true })
      this.release()
      return
    }
    for (const e of out) this.bus.publish(e)
  }

  unwritten (turnId: string): readonly BusEnvelope[] | null {
    // An earlier group of the turn still on its way to the store could land after the caller's write.
    if (this.writer.holds(turnId)) return null
    return this.group.filter((e) => e.turn_id === turnId)
  }

  private readonly queuedFlush = (): void => {
    this.flushQueued = false
    this.flush()
  }

  private closeDeltaWindow (): void {
    if (this.deltaWindow === null) return
    clearTimeout(this.deltaWindow)
    this.deltaWindow = null
  }

  /** Stored first: with a synchronous store no client can see an event a crash would lose. */
  private readonly flush = (): void => {
    this.closeDeltaWindow()
    const waiters = this.flushWaiters
    if (waiters.length > 0) this.flushWaiters = []
    if (this.group.length === 0 && this.checkpoints.length === 0 && this.finished.length === 0 && this.records.length === 0) {
      for (const resolve of waiters) resolve()
      return
    }
    const group = this.group
    const checkpoints = this.checkpoints
    const finished = this.finished
    const records = this.records
    this.group = []
    this.checkpoints = []
    if (finished.length > 0) this.finished = []
    if (records.length > 0) this.records = []
    // A turn saved twice in one tick is written once, as it stands now.
    const saved = this.writer.append(group, checkpoints, finished.map((f) => f.save), [...new Set(records.map((r) => r.turn))])
    for (const resolve of waiters) resolve()
    if (finished.length > 0) this.settleFinished(finished, saved)
    if (records.length > 0) this.settleRecords(records, saved)
    this.afterGroupWrite?.(group)
    // A store that writes asynchronously (PostgreSQL) must hold a checkpoint before anyone sees the
    // events that follow it: an instance dying in between would otherwise resume from an older
    // checkpoint past events clients already saw (an approval asked again, a tool run twice).
    const hold = checkpoints.length > 0 && this.store.appendEventsNow === undefined
    if (!hold && this.held.length === 0) {
      for (const envelope of group) this.bus.publish(envelope)
      return
    }
    const entry = { group, ready: !hold }
    this.held.push(entry)
    if (hold) {
      void this.writer.appended(CHECKPOINT_HOLD_MS).then(() => {
        entry.ready = true
        this.release()
      })
    }
  }

  /**
   * With a synchronous store (null otherwise): the turn's final record and session are written at
   * the end of this tick in its group's transaction, with `closing` (the turn's terminal event)
   * and every event of the turn still waiting, so the turns that end in one tick share one commit;
   * `closing` goes out with that group, after the write. Resolves once they are written. If that
   * write fails (the store is unreachable: its events are retried), they are saved on their own,
   * as a turn saves them without this.
   */
  finish (save: FinishedTurn, closing: BusEnvelope): Promise<void> | null {
    if (this.store.appendEventsNow === undefined) return null
    const done = new Promise<void>((resolve) => { this.finished.push({ save, done: resolve }) })
    this.group.push(closing)
    this.queueGroupFlush()
    return done
  }

  private settleFinished (finished: ReadonlyArray<{ save: FinishedTurn, done: () => void }>, saved: boolean): void {
    for (const { save, done } of finished) {
      if (saved) {
        done()
        continue
      }
      this.store.saveTurnAndSession(save.turn, save.session)
        .catch((err: unknown) => { this.log.error({ err, turn_id: save.turn.turn_id }, 'could not persist the finished turn') })
        .finally(done)
    }
  }

  /**
   * With a synchronous store the record is written at the end of this tick in its group's
   * transaction, with every event appended before it (its `last_seq`, an approval's
   * `approval.resolved` with its audit entry); with an asynchronous one it is saved as it stands
   * now, once the events appended so far are stored.
   */
  async saveTurn (turn: TurnRecord): Promise<void> {
    if (this.store.appendEventsNow === undefined) {
      const snapshot = structuredClone(turn)
      await this.written()
      await this.store.saveTurn(snapshot)
      return
    }
    await new Promise<void>((resolve, reject) => {
      this.records.push({ turn, resolve, reject })
      this.queueGroupFlush()
    })
  }

  /** Records the group's write did not take (the store refused it) are saved once its events, retried, are stored. */
  private settleRecords (records: readonly RecordSave[], saved: boolean): void {
    if (saved) {
      for (const r of records) r.resolve()
      return
    }
    void this.writer.appended(CHECKPOINT_HOLD_MS).then(() => {
      for (const r of records) this.store.saveTurn(r.turn).then(r.resolve, r.reject)
    })
  }

  /** Fans out the held groups that are ready, in order, up to the first that is not. */
  private release (): void {
    while (this.held[0]?.ready === true) {
      const { group } = this.held.shift() as { group: BusEnvelope[] }
      for (const envelope of group) this.bus.publish(envelope)
    }
  }

  /**
   * Resolves once everything appended so far (and every checkpoint taken) is in the store, or the
   * store stayed unreachable for a while. With a synchronous store the pending group is written
   * at the end of this tick, as it would be anyway, so the turns that wait for their checkpoints in
   * one tick share one transaction (under load, one commit instead of one per turn); an
   * asynchronous store's is sent now.
   */
  async written (): Promise<void> {
    if (this.flushQueued && this.store.appendEventsNow !== undefined) {
      await new Promise<void>((resolve) => { this.flushWaiters.push(resolve) })
    } else {
      this.flush()
    }
    await this.writer.appended(CHECKPOINT_HOLD_MS)
  }

  async replay (turnId: string, afterSeq: number, knownLastSeq?: number): Promise<ReplayResult> {
    // A caller may know of an appended event (a turn's last_seq) whose group is still queued: the
    // group is written now. One that knows of nothing queued (a stream starting with the turn)
    // gets the rest live, when the group goes out, instead of waiting for its write.
    if (knownLastSeq === undefined || this.group.some((e) => e.turn_id === turnId && e.seq <= knownLastSeq)) this.flush()
    return await replayFilled(this.sources, turnId, afterSeq, knownLastSeq)
  }

  async lastSeq (turnId: string): Promise<number> {
    this.flush()
    const [live, stored] = await Promise.all([
      this.bus.lastSeq(turnId).catch(() => 0),
      this.store.lastEventSeq(turnId)
    ])
    return Math.max(live, stored)
  }

  /**
   * A finished turn's replays are answered from the store, so an in-process bus forgets
   * its copy as soon as every event of the turn is written and fanned out, instead of holding the
   * events of every turn of the last `turns.retention_ms` in the heap (memory that grows with
   * throughput, and that every garbage collection scans). A shared bus (Redis) keeps its
   * streams: other instances replay from them.
   */
  ended (turnId: string): boolean {
    if (this.bus.shared) return true
    if (!this.pending(turnId)) {
      this.bus.drop(turnId)
      return false
    }
    // Still being written (an asynchronous store) or held behind a checkpoint: once that is
    // done; a store that stays unreachable leaves the copy to `drop`.
    void this.writer.appended(CHECKPOINT_HOLD_MS).then(() => { if (!this.pending(turnId)) this.bus.drop(turnId) })
    return true
  }

  private pending (turnId: string): boolean {
    const of = (e: BusEnvelope): boolean => e.turn_id === turnId
    return this.writer.holds(turnId) || this.group.some(of) || this.held.some((h) => h.group.some(of))
  }

  async close (): Promise<void> {
    this.flush()
    await this.writer.close(5000)
    for (const entry of this.held) entry.ready = true
    this.release()
  }
}
