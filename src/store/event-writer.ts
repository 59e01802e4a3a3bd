/**
 * Ordered, buffered writer of events into the store's event log. `publish` is synchronous, the
 * store is not: events queue here and go out in order, one batch at a time, retried while the
 * store is unreachable (bounded: past `maxBuffered` the oldest are dropped and logged).
 * A store that writes synchronously (SQLite) gets each group of events in one transaction
 * before append() returns; an asynchronous one (PostgreSQL) gets a group in one statement.
 */
import type { Logger } from 'pino'
import type { BusEnvelope } from '../core/envelope.js'
import type { Store } from './store.js'

const BATCH = 500

export interface EventLogWriterOptions {
  store: Pick<Store, 'appendEvents' | 'appendEventsNow'>
  log: Logger
  maxBuffered: number
  retryMs: number
}

export class EventLogWriter {
  private readonly options: EventLogWriterOptions
  private queue: BusEnvelope[] = []
  /** The batch an asynchronous store is writing now. */
  private writing: readonly BusEnvelope[] = []
  private running: Promise<void> | null = null
  private closed = false
  private dropped = 0
  private wake: (() => void) | null = null

  constructor (options: EventLogWriterOptions) {
    this.options = options
  }

  /** Appends a group of events (in seq order per turn) as one write when nothing is queued. */
  append (group: readonly BusEnvelope[]): void {
    if (this.closed || group.length === 0) return
    const now = this.options.store.appendEventsNow
    if (now !== undefined && this.queue.length === 0) {
      try {
        now.call(this.options.store, group)
        return
      } catch (err) {
        this.options.log.warn({ err }, 'could not append to the event log; retrying')
      }
    }
    for (const envelope of group) this.queue.push(envelope)
    this.trim()
    this.running ??= this.run()
  }

  /** Whether events of the turn are still on their way to the store (queued, or being written). */
  holds (turnId: string): boolean {
    return this.queue.some((e) => e.turn_id === turnId) || this.writing.some((e) => e.turn_id === turnId)
  }

  private trim (): void {
    const excess = this.queue.length - this.options.maxBuffered
    if (excess <= 0) return
    this.queue.splice(0, excess)
    if (this.dropped === 0) this.options.log.error({ max_buffered: this.options.maxBuffered }, 'the event log is unreachable and its buffer is full: dropping the oldest events')
    this.dropped += excess
  }

  private async run (): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, BATCH)
      this.writing = batch
      try {
        await this.options.store.appendEvents(batch)
        this.writing = []
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

  /** Waits until everything appended so far is written (or `timeoutMs` passed). */
  async flush (timeoutMs: number): Promise<void> {
    const running = this.running
    if (running === null) return
    let timer: NodeJS.Timeout | undefined
    await Promise.race([running, new Promise<void>((resolve) => { timer = setTimeout(resolve, timeoutMs) })])
    clearTimeout(timer)
  }

  /** Makes one last attempt to write what is queued, then stops. */
  async close (timeoutMs: number): Promise<void> {
    this.closed = true
    this.wake?.()
    await this.flush(timeoutMs)
    if (this.queue.length > 0) this.options.log.error({ lost: this.queue.length }, 'closing with events the event log never received')
  }
}
