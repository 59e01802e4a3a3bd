/**
 * This instance's ordered writer into Redis: `publish` is synchronous, so events queue here and
 * go out one pipeline at a time (XADD into the turn's stream, then PUBLISH to its turn and
 * session channels), in seq order. A failed batch is retried whole once Redis is back (the
 * stream refuses what it already has). After every reconnect the writer compares each stream
 * with what it had written and re-publishes from its own ring what Redis lost (a restarted
 * Redis without persistence comes back empty).
 */
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import type { BusEnvelope } from './bus.js'
import { entryId, isDuplicateEntry, type RedisKeys } from './redis-codec.js'
import type { EventRing } from './ring.js'
import { waitAtMost } from '../core/wait-at-most.js'

const BATCH = 256
/** Attempts of one batch against a reachable Redis before it is dropped (a persistent error). */
const MAX_ATTEMPTS_WHILE_READY = 5

export interface StreamWriterOptions {
  redis: Redis
  keys: RedisKeys
  maxLen: number
  ttlMs: number
  maxBuffered: number
  /** This instance's own recent events of a turn (what it can re-publish). */
  localLog: (turnId: string) => EventRing | undefined
  log: Logger
}

export function seqOfEntryId (id: string): number {
  const seq = Number(id.slice(id.indexOf('-') + 1))
  return Number.isInteger(seq) ? seq : 0
}

export class StreamWriter {
  private readonly options: StreamWriterOptions
  private queue: BusEnvelope[] = []
  /** Per turn: highest seq Redis acknowledged from this writer. */
  private readonly written = new Map<string, number>()
  private running: Promise<void> | null = null
  private resyncWanted = false
  private closed = false
  private dropped = 0
  private wake: (() => void) | null = null

  constructor (options: StreamWriterOptions) {
    this.options = options
  }

  enqueue (envelope: BusEnvelope): void {
    if (this.closed) return
    this.queue.push(envelope)
    this.trim()
    this.kick()
  }

  forget (turnId: string): void {
    this.written.delete(turnId)
  }

  /** Called on every reconnect: Redis may have lost streams while it was away. */
  reconnected (): void {
    this.resyncWanted = true
    this.wake?.()
    this.kick()
  }

  private kick (): void {
    this.running ??= this.run().finally(() => { this.running = null })
  }

  private trim (): void {
    const excess = this.queue.length - this.options.maxBuffered
    if (excess <= 0) return
    this.queue.splice(0, excess)
    if (this.dropped === 0) this.options.log.error({ max_buffered: this.options.maxBuffered }, 'Redis is unreachable and the event buffer is full: dropping the oldest events from Redis (the event log keeps them)')
    this.dropped += excess
  }

  private async pause (): Promise<void> {
    // While Redis is down, the next reconnect wakes us; while it is up, back off briefly.
    const ms = this.options.redis.status === 'ready' ? 200 : 5000
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms)
      timer.unref()
      this.wake = () => { clearTimeout(timer); resolve() }
    })
    this.wake = null
  }

  private async run (): Promise<void> {
    let attempts = 0
    for (;;) {
      if (this.resyncWanted && !this.closed) {
        this.resyncWanted = false
        try {
          await this.resync()
        } catch (err) {
          this.resyncWanted = true
          this.options.log.debug({ err }, 'Redis resync failed; waiting for the connection')
          await this.pause()
          continue
        }
      }
      if (this.queue.length === 0) return
      const batch = this.queue.splice(0, BATCH)
      try {
        await this.write(batch)
        attempts = 0
        if (this.dropped > 0) {
          this.options.log.warn({ dropped: this.dropped }, 'Redis is reachable again')
          this.dropped = 0
        }
      } catch (err) {
        if (this.options.redis.status === 'ready') attempts++
        if (attempts >= MAX_ATTEMPTS_WHILE_READY) {
          this.options.log.error({ err, events: batch.length }, 'Redis keeps refusing a batch of events; dropped it (the event log keeps them)')
          attempts = 0
          continue
        }
        this.queue = [...batch, ...this.queue]
        this.trim()
        if (this.closed) return
        this.options.log.debug({ err, pending: this.queue.length }, 'could not write events to Redis; retrying')
        await this.pause()
      }
    }
  }

  private async write (batch: readonly BusEnvelope[]): Promise<void> {
    const { redis, keys, maxLen, ttlMs } = this.options
    const pipeline = redis.pipeline()
    const turns = new Set<string>()
    for (const e of batch) {
      const text = JSON.stringify(e)
      pipeline.xadd(keys.stream(e.turn_id), 'MAXLEN', '~', maxLen, entryId(e.seq), 'e', text)
      pipeline.publish(keys.turnChannel(e.turn_id), text)
      pipeline.publish(keys.sessionChannel(e.tenant, e.session_id), text)
      turns.add(e.turn_id)
    }
    for (const turnId of turns) pipeline.pexpire(keys.stream(turnId), ttlMs)
    const results = await pipeline.exec()
    if (results === null) throw new Error('the Redis pipeline was discarded')
    for (const [err] of results) if (err !== null && !isDuplicateEntry(err)) throw err
    for (const e of batch) this.written.set(e.turn_id, Math.max(this.written.get(e.turn_id) ?? 0, e.seq))
  }

  /** Re-publishes, in order, the events this writer had written that a stream no longer has. */
  private async resync (): Promise<void> {
    const turns = [...this.written.keys()]
    if (turns.length === 0) return
    const pipeline = this.options.redis.pipeline()
    for (const turnId of turns) pipeline.xrevrange(this.options.keys.stream(turnId), '+', '-', 'COUNT', 1)
    const results = await pipeline.exec()
    if (results === null) throw new Error('the Redis pipeline was discarded')
    const lost: BusEnvelope[] = []
    turns.forEach((turnId, i) => {
      const [err, value] = results[i] ?? [null, []]
      if (err !== null) throw err
      const top = seqOfEntryId((value as Array<[string, string[]]>)[0]?.[0] ?? '0-0')
      const had = this.written.get(turnId) ?? 0
      if (top >= had) return
      const ring = this.options.localLog(turnId)
      if (ring === undefined) return
      const replay = ring.replay(Math.max(top, ring.firstSeq - 1))
      if (replay.kind === 'events') lost.push(...replay.events.filter((e) => e.seq <= had))
    })
    for (let i = 0; i < lost.length; i += BATCH) await this.write(lost.slice(i, i + BATCH))
    if (lost.length > 0) this.options.log.warn({ events: lost.length }, 're-published events that Redis had lost')
  }

  /** Writes what is queued (bounded by `timeoutMs`), then refuses new events. */
  async close (timeoutMs: number): Promise<void> {
    this.closed = true
    this.wake?.()
    const running = this.running
    if (running !== null) {
      await waitAtMost(running, timeoutMs)
    }
    if (this.queue.length > 0) this.options.log.warn({ lost: this.queue.length }, 'closing with events Redis never received (the event log keeps them)')
  }
}
