/**
 * Ordered, buffered writer of events into the store's event log. `publish` is synchronous, the
 * store is not: events queue here and go out in order, one batch at a time, retried while the
 * store is unreachable (bounded: past `maxBuffered` the oldest are dropped and logged).
 * A store that writes synchronously (SQLite) gets each group of events in one transaction
 * before append() returns; an asynchronous one (PostgreSQL) gets a group in one statement.
 */
import type { Logger } from 'pino'
import type { BusEnvelope, CheckpointRow } from '../core/envelope.js'
import type { FinishedTurn, Store, TurnRecord } from '../store/store.js'
import { waitAtMost } from '../core/wait-at-most.js'

const BATCH = 500

export interface EventLogWriterOptions {
  store: Pick<Store, 'appendEvents' | 'appendEventsNow'>
  log: Logger
  maxBuffered: number
  retryMs: number
}

/** Queued in order: a checkpoint never reaches the store before the events it follows. */
type Entry = { envelope: BusEnvelope } | { checkpoint: CheckpointRow }

function split (entries: readonly Entry[]): { events: BusEnvelope[], checkpoints: CheckpointRow[] } {
  const events: BusEnvelope[] = []
  // Only the latest checkpoint of a turn matters.
  const checkpoints = new Map<string, CheckpointRow>()
  for (const e of entries) {
    if ('envelope' in e) events.push(e.envelope)
    else checkpoints.set(e.checkpoint.turn_id, e.checkpoint)
  }
  return { events, checkpoints: [...checkpoints.values()] }
}

export class EventLogWriter {
  private readonly options: EventLogWriterOptions
  private queue: Entry[] = []
  /** The batch an asynchronous store is writing now. */
  private writing: readonly Entry[] = []
  private running: Promise<void> | null = null
  /** Entries ever queued, and how many of them are done (written, or dropped): positions in one sequence. */
  private queued = 0
  private done = 0
  private waiters: Array<{ upTo: number, resolve: () => void }> = []
  private closed = false
  private dropped = 0
  private wake: (() => void) | null = null

  constructor (options: EventLogWriterOptions) {
    this.options = options
  }

  /**
   * Appends a group of events (in seq order per turn), with the checkpoints taken after them, as
   * one write when nothing is queued. `finished` turns' records and sessions, and `records` of
   * running turns, go in that same write when it is one made now (a synchronous store); returns
   * whether they did: if not, the caller saves them itself (the queue retries events only).
   */
  append (
    group: readonly BusEnvelope[], checkpoints: readonly CheckpointRow[] = [], finished: readonly FinishedTurn[] = [],
    records: readonly TurnRecord[] = []
  ): boolean {
    if (this.closed) return false
    if (group.length === 0 && checkpoints.length === 0 && finished.length === 0 && records.length === 0) return true
    const now = this.options.store.appendEventsNow
    if (now !== undefined && this.queue.length === 0) {
      try {
        now.call(this.options.store, group, checkpoints, finished, records)
        return true
      } catch (err) {
        this.options.log.warn({ err }, 'could not append to the event log; retrying')
      }
    }
    for (const envelope of group) this.queue.push({ envelope })
    for (const checkpoint of checkpoints) this.queue.push({ checkpoint })
    this.queued += group.length + checkpoints.length
    this.trim()
    this.running ??= this.run()
    return finished.length === 0 && records.length === 0
  }

  /** Whether events of the turn are still on their way to the store (queued, or being written). */
  holds (turnId: string): boolean {
    const of = (e: Entry): boolean => ('envelope' in e ? e.envelope.turn_id : e.checkpoint.turn_id) === turnId
    return this.queue.some(of) || this.writing.some(of)
  }

  private trim (): void {
    const excess = this.queue.length - this.options.maxBuffered
    if (excess <= 0) return
    this.queue.splice(0, excess)
    this.settle(excess)
    if (this.dropped === 0) this.options.log.error({ max_buffered: this.options.maxBuffered }, 'the event log is unreachable and its buffer is full: dropping the oldest events')
    this.dropped += excess
  }

  private async run (): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, BATCH)
      const { events, checkpoints } = split(batch)
      this.writing = batch
      try {
        await this.options.store.appendEvents(events, checkpoints)
        this.writing = []
        this.settle(batch.length)
        if (this.dropped > 0) {
          this.options.log.warn({ dropped: this.dropped }, 'the event log is reachable again')
          this.dropped = 0
        }
      } catch (err) {
        this.writing = []
        this.queue = [...batch, ...this.queue]
        this.trim()
        if (this.closed) break
        this.options.log.warn({ err, pending: this.queue.length }, 'could not append to the event log; retrying')
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.options.retryMs)
          timer.unref()
          this.wake = () => { clearTimeout(timer); resolve() }
        })
        this.wake = null
      }
    }
    this.running = null
  }

  private settle (count: number): void {
    this.done += count
    const ready = this.waiters.filter((w) => w.upTo <= this.done)
    if (ready.length === 0) return
    this.waiters = this.waiters.filter((w) => w.upTo > this.done)
    for (const w of ready) w.resolve()
  }

  /**
   * Resolves once what was appended so far is written (or dropped), or after `timeoutMs`; later
   * appends do not hold it back.
   */
  async appended (timeoutMs: number): Promise<void> {
    if (this.done >= this.queued) return
    const upTo = this.queued
    let timer: NodeJS.Timeout | undefined
    await new Promise<void>((resolve) => {
      this.waiters.push({ upTo, resolve })
      timer = setTimeout(resolve, timeoutMs)
    })
    clearTimeout(timer)
  }

  /** Waits until everything appended so far is written (or `timeoutMs` passed). */
  async flush (timeoutMs: number): Promise<void> {
    const running = this.running
    if (running === null) return
    await waitAtMost(running, timeoutMs)
  }

  /** Makes one last attempt to write what is queued, then stops. */
  async close (timeoutMs: number): Promise<void> {
    this.closed = true
    this.wake?.()
    await this.flush(timeoutMs)
    const waiting = this.waiters
    this.waiters = []
    for (const w of waiting) w.resolve()
    if (this.queue.length > 0) this.options.log.error({ lost: this.queue.length }, 'closing with events the event log never received')
  }
}
