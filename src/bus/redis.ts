/**
 * Event bus shared by many gateway instances through Redis:
 * - each turn's log is a stream (`<prefix>log:<turn>`, entry id `0-<seq>`, capped, expiring),
 *   so any instance replays any turn by seq;
 * - live events go out on pub/sub channels per turn and per session; every subscriber passes
 *   them through an OrderedFeed, which drops duplicates and fills holes from the stream;
 * - control messages (cancels, approval answers, backchannel probes) use one pub/sub channel.
 * Everything read from Redis is validated before use (redis-codec.ts).
 * The instance that runs a turn also keeps its recent events in memory: its own subscribers are
 * served from there synchronously (a Redis outage does not stall them), and it re-publishes from
 * there whatever a restarted Redis lost.
 */
import { Redis, type RedisOptions } from 'ioredis'
import type { Logger } from 'pino'
import { TERMINAL_EVENT_KINDS } from '../../schemas/events.js'
import { TollgateError } from '../core/errors.js'
import { sessionKey } from '../core/tenancy.js'
import type { BusEnvelope, ControlMessage, EnvelopeListener, EventArchive, EventBus, ReplayResult, Unsubscribe } from './bus.js'
import { contiguousAfter } from './contiguous.js'
import { OrderedFeed } from './ordered-feed.js'
import { entryId, envelopesOf, parseControl, parseEnvelope, RedisKeys } from './redis-codec.js'
import { seqOfEntryId, StreamWriter } from './redis-writer.js'
import { EventRing } from './ring.js'
import { waitAtMost } from '../core/wait-at-most.js'

export interface RedisBusOptions {
  url: string
  keyPrefix: string
  maxEventsPerTurn: number
  /** How long a turn's stream outlives its last event. */
  streamTtlMs: number
  maxBufferedEvents: number
  connectTimeoutMs: number
  /** Second source for filling holes (the store's event log), when Redis lost them. */
  archive?: EventArchive
  log: Logger
  onListenerError: (err: unknown) => void
}

/** Feed retries while a hole may still be re-published by its owner after a Redis restart. */
const FILL_RETRY_MS = 250
const FILL_GIVE_UP_MS = 10_000
const MAX_SESSION_TURNS = 1024

interface TurnFeed {
  listeners: Set<EnvelopeListener>
  feed: OrderedFeed
  /** Settles once the feed knows where live delivery starts (Redis subscribed, or local turn). */
  ready: Promise<void>
  markReady: () => void
}

interface SessionFeed {
  listeners: Set<EnvelopeListener>
  turns: Map<string, OrderedFeed>
}

function connectionOptions (connectTimeoutMs: number): RedisOptions {
  return {
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    // Fail fast while disconnected; the writer and the feeds retry on their own terms, in order.
    enableOfflineQueue: false,
    autoResubscribe: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000)
  }
}

export class RedisEventBus implements EventBus {
  readonly shared = true
  private readonly options: RedisBusOptions
  private readonly keys: RedisKeys
  private readonly cmd: Redis
  private readonly sub: Redis
  private readonly writer: StreamWriter
  private readonly rings = new Map<string, EventRing>()
  private readonly turnFeeds = new Map<string, TurnFeed>()
  /** By sessionKey(tenant, session id). */
  private readonly sessionFeeds = new Map<string, SessionFeed>()
  private readonly controlListeners = new Set<(message: ControlMessage) => void>()
  private readonly channels = new Map<string, number>()
  /** Connections (commands, subscriber) that are down, with the time each was lost. */
  private readonly down = new Map<string, number>()
  private closed = false

  private constructor (options: RedisBusOptions, cmd: Redis, sub: Redis) {
    this.options = options
    this.keys = new RedisKeys(options.keyPrefix)
    this.cmd = cmd
    this.sub = sub
    this.writer = new StreamWriter({
      redis: cmd,
      keys: this.keys,
      maxLen: options.maxEventsPerTurn,
      ttlMs: options.streamTtlMs,
      maxBuffered: options.maxBufferedEvents,
      localLog: (turnId) => this.rings.get(turnId),
      log: options.log
    })
  }

  /** Connects both connections (commands, subscriptions); fails if Redis is unreachable now. */
  static async connect (options: RedisBusOptions): Promise<RedisEventBus> {
    const cmd = new Redis(options.url, { ...connectionOptions(options.connectTimeoutMs), connectionName: 'tollgate-bus' })
    const sub = new Redis(options.url, { ...connectionOptions(options.connectTimeoutMs), connectionName: 'tollgate-bus-sub' })
    for (const [name, conn] of [['commands', cmd], ['subscriber', sub]] as const) {
      conn.on('error', (err: Error) => { options.log.debug({ err, connection: name }, 'Redis connection error') })
    }
    try {
      await Promise.all([cmd.connect(), sub.connect()])
    } catch (err) {
      cmd.disconnect()
      sub.disconnect()
      throw new Error(`cannot connect to Redis: ${(err as Error).message}`, { cause: err })
    }
    const bus = new RedisEventBus(options, cmd, sub)
    await bus.listen()
    return bus
  }

  private async listen (): Promise<void> {
    this.sub.on('message', (channel: string, message: string) => { this.onMessage(channel, message) })
    for (const [conn, name] of [[this.cmd, 'commands'], [this.sub, 'subscriber']] as const) {
      conn.on('close', () => {
        if (this.closed || this.down.has(name)) return
        if (this.down.size === 0) this.options.log.warn({ connection: name }, 'lost the connection to Redis; reconnecting')
        this.down.set(name, Date.now())
      })
      conn.on('ready', () => {
        const since = this.unreachableSince()
        this.down.delete(name)
        if (since !== null && this.down.size === 0) this.options.log.info({ down_ms: Date.now() - since }, 'reconnected to Redis')
      })
    }
    this.cmd.on('ready', () => { this.writer.reconnected() })
    this.sub.on('ready', () => { void this.resubscribe() })
    this.channels.set(this.keys.controlChannel, 1)
    await this.sub.subscribe(this.keys.controlChannel)
  }

  /** After the subscriber reconnects: subscribe again, then fetch whatever passed meanwhile. */
  private async resubscribe (): Promise<void> {
    if (this.closed) return
    try {
      await this.sub.subscribe(...this.channels.keys())
    } catch (err) {
      this.options.log.debug({ err }, 'Redis resubscribe failed; waiting for the next reconnect')
      return
    }
    for (const [turnId, tf] of this.turnFeeds) {
      if (tf.feed.position === null) void this.initFeed(turnId, tf)
      else tf.feed.catchUp()
    }
    for (const sf of this.sessionFeeds.values()) for (const feed of sf.turns.values()) feed.catchUp()
  }

  private onMessage (channel: string, message: string): void {
    if (channel === this.keys.controlChannel) {
      this.onControlMessage(message)
      return
    }
    const envelope = parseEnvelope(message)
    if (envelope === null) {
      this.options.log.warn({ channel }, 'dropped a malformed bus message')
      return
    }
    if (channel === this.keys.turnChannel(envelope.turn_id)) this.turnFeeds.get(envelope.turn_id)?.feed.offer(envelope)
    else if (channel === this.keys.sessionChannel(envelope.tenant, envelope.session_id)) this.offerToSession(envelope)
  }

  private onControlMessage (message: string): void {
    const control = parseControl(message)
    if (control === null) {
      this.options.log.warn('dropped a malformed control message')
      return
    }
    for (const listener of [...this.controlListeners]) {
      try {
        listener(control)
      } catch (err) {
        this.options.onListenerError(err)
      }
    }
  }

  private fanOut (listeners: Iterable<EnvelopeListener>, envelope: BusEnvelope): void {
    for (const listener of [...listeners]) {
      try {
        listener(envelope)
      } catch (err) {
        this.options.onListenerError(err)
      }
    }
  }

  private addChannel (channel: string): void {
    const n = this.channels.get(channel) ?? 0
    this.channels.set(channel, n + 1)
    if (n === 0) this.sub.subscribe(channel).catch(() => { /* resubscribed on the next reconnect */ })
  }

  private removeChannel (channel: string): void {
    const n = this.channels.get(channel) ?? 0
    if (n > 1) {
      this.channels.set(channel, n - 1)
      return
    }
    this.channels.delete(channel)
    if (!this.closed) this.sub.unsubscribe(channel).catch(() => {})
  }

  /** Events after `afterSeq` from the stream, then from the archive if the stream lost them. */
  private async fetchAfter (turnId: string, afterSeq: number): Promise<BusEnvelope[]> {
    const limit = this.options.maxEventsPerTurn
    let fromStream: BusEnvelope[] = []
    try {
      fromStream = await this.range(turnId, afterSeq, limit)
    } catch {
      // Redis unreachable: the archive may still answer.
    }
    if (fromStream[0]?.seq === afterSeq + 1 || this.options.archive === undefined) return fromStream
    const stored = await this.options.archive(turnId, afterSeq, limit)
    return stored.length > 0 ? stored : fromStream
  }

  private async range (turnId: string, afterSeq: number, limit: number): Promise<BusEnvelope[]> {
    const entries = await this.cmd.xrange(this.keys.stream(turnId), entryId(afterSeq + 1), '+', 'COUNT', limit)
    return envelopesOf(entries)
  }

  private async topSeq (turnId: string): Promise<number> {
    const entries = await this.cmd.xrevrange(this.keys.stream(turnId), '+', '-', 'COUNT', 1)
    return seqOfEntryId(entries[0]?.[0] ?? '0-0')
  }

  private async initFeed (turnId: string, tf: TurnFeed): Promise<void> {
    const channel = this.keys.turnChannel(turnId)
    try {
      await this.sub.subscribe(channel)
      if (this.turnFeeds.get(turnId) !== tf) {
        // Unsubscribed meanwhile: undo a subscription that may have landed after it.
        if (!this.channels.has(channel)) await this.sub.unsubscribe(channel)
        return
      }
      // Subscribed first, then read the top: nothing published in between can be missed.
      const top = await this.topSeq(turnId)
      tf.feed.start(top)
      tf.markReady()
    } catch {
      // Redis unreachable: retried by resubscribe() on the next reconnect.
    }
  }

  publish (envelope: BusEnvelope): void {
    let ring = this.rings.get(envelope.turn_id)
    if (ring === undefined) {
      ring = new EventRing(this.options.maxEventsPerTurn)
      this.rings.set(envelope.turn_id, ring)
    }
    ring.push(envelope)
    const tf = this.turnFeeds.get(envelope.turn_id)
    if (tf !== undefined) {
      // The turn runs here: its subscribers replay from the ring, so live delivery starts now.
      tf.feed.start(envelope.seq - 1)
      tf.markReady()
      tf.feed.offer(envelope)
    }
    this.offerToSession(envelope)
    this.writer.enqueue(envelope)
  }

  private offerToSession (envelope: BusEnvelope): void {
    const sf = this.sessionFeeds.get(sessionKey(envelope.tenant, envelope.session_id))
    if (sf === undefined) return
    let feed = sf.turns.get(envelope.turn_id)
    if (feed === undefined) {
      if (sf.turns.size >= MAX_SESSION_TURNS) {
        const oldest = sf.turns.keys().next().value
        if (oldest !== undefined) {
          sf.turns.get(oldest)?.close()
          sf.turns.delete(oldest)
        }
      }
      const created = this.createFeed(envelope.turn_id, (e) => {
        this.fanOut(sf.listeners, e)
        if (TERMINAL_EVENT_KINDS.has(e.event.kind)) {
          created.close()
          sf.turns.delete(e.turn_id)
        }
      })
      feed = created
      sf.turns.set(envelope.turn_id, feed)
      // A session subscriber sees a turn from the first event that reaches it (no replay).
      feed.start(envelope.seq - 1)
    }
    feed.offer(envelope)
  }

  private createFeed (turnId: string, deliver: (e: BusEnvelope) => void): OrderedFeed {
    return new OrderedFeed({
      deliver,
      fetch: async (afterSeq) => await this.fetchAfter(turnId, afterSeq),
      retryMs: FILL_RETRY_MS,
      giveUpMs: FILL_GIVE_UP_MS,
      maxHeld: this.options.maxEventsPerTurn,
      onHole: (fromSeq, toSeq) => { this.options.log.error({ turn_id: turnId, from_seq: fromSeq, to_seq: toSeq }, 'events of a turn were lost for good (Redis lost them and nobody re-published them)') }
    })
  }

  subscribeTurn (turnId: string, listener: EnvelopeListener): Unsubscribe {
    let tf = this.turnFeeds.get(turnId)
    if (tf === undefined) {
      let markReady!: () => void
      const ready = new Promise<void>((resolve) => { markReady = resolve })
      const listeners = new Set<EnvelopeListener>()
      const created: TurnFeed = { listeners, feed: this.createFeed(turnId, (e) => { this.fanOut(listeners, e) }), ready, markReady }
      tf = created
      this.turnFeeds.set(turnId, created)
      this.channels.set(this.keys.turnChannel(turnId), (this.channels.get(this.keys.turnChannel(turnId)) ?? 0) + 1)
      const ring = this.rings.get(turnId)
      if (ring !== undefined) {
        created.feed.start(ring.lastSeq)
        created.markReady()
      }
      void this.initFeed(turnId, created)
    }
    const feed = tf
    feed.listeners.add(listener)
    return () => {
      feed.listeners.delete(listener)
      if (feed.listeners.size > 0 || this.turnFeeds.get(turnId) !== feed) return
      this.turnFeeds.delete(turnId)
      feed.feed.close()
      feed.markReady()
      this.removeChannel(this.keys.turnChannel(turnId))
    }
  }

  subscribeSession (tenant: string, sessionId: string, listener: EnvelopeListener): Unsubscribe {
    const key = sessionKey(tenant, sessionId)
    let sf = this.sessionFeeds.get(key)
    if (sf === undefined) {
      sf = { listeners: new Set(), turns: new Map() }
      this.sessionFeeds.set(key, sf)
      this.addChannel(this.keys.sessionChannel(tenant, sessionId))
    }
    const feed = sf
    feed.listeners.add(listener)
    return () => {
      feed.listeners.delete(listener)
      if (feed.listeners.size > 0 || this.sessionFeeds.get(key) !== feed) return
      this.sessionFeeds.delete(key)
      for (const f of feed.turns.values()) f.close()
      this.removeChannel(this.keys.sessionChannel(tenant, sessionId))
    }
  }

  async replay (turnId: string, afterSeq: number): Promise<ReplayResult> {
    const ring = this.rings.get(turnId)
    if (ring?.covers(afterSeq) === true) return ring.replay(afterSeq)
    const tf = this.turnFeeds.get(turnId)
    if (tf !== undefined) {
      // A follower subscribes, then replays: the replay must not read the stream before the
      // subscription is live, or events published in between would reach neither.
      await waitAtMost(tf.ready, this.options.connectTimeoutMs)
    }
    let events: BusEnvelope[]
    let exists: number
    try {
      events = await this.range(turnId, afterSeq, this.options.maxEventsPerTurn)
      exists = events.length > 0 ? 1 : await this.cmd.exists(this.keys.stream(turnId))
    } catch (err) {
      throw new TollgateError('NOT_READY', 'the event bus is unreachable; retry', { cause: err })
    }
    if (events.length === 0) return exists === 1 ? { kind: 'events', events: [] } : { kind: 'unknown' }
    const first = events[0]?.seq ?? afterSeq + 1
    if (first !== afterSeq + 1) return { kind: 'gap', firstSeq: first }
    return { kind: 'events', events: contiguousAfter(events, afterSeq) }
  }

  async lastSeq (turnId: string): Promise<number> {
    const local = this.rings.get(turnId)?.lastSeq ?? 0
    const shared = await this.topSeq(turnId).catch(() => 0)
    return Math.max(local, shared)
  }

  drop (turnId: string): void {
    this.rings.delete(turnId)
    this.writer.forget(turnId)
    this.cmd.del(this.keys.stream(turnId)).catch(() => { /* the stream expires on its own */ })
  }

  /** Since the first of the two connections was lost, while either is still down. */
  unreachableSince (): number | null {
    return this.down.size === 0 ? null : Math.min(...this.down.values())
  }

  publishControl (message: ControlMessage): void {
    this.cmd.publish(this.keys.controlChannel, JSON.stringify(message)).catch((err: unknown) => {
      this.options.log.warn({ err, type: message.type }, 'could not publish a control message')
    })
  }

  onControl (listener: (message: ControlMessage) => void): Unsubscribe {
    this.controlListeners.add(listener)
    return () => { this.controlListeners.delete(listener) }
  }

  async close (): Promise<void> {
    if (this.closed) return
    await this.writer.close(5000)
    this.closed = true
    for (const tf of this.turnFeeds.values()) {
      tf.feed.close()
      tf.markReady()
    }
    for (const sf of this.sessionFeeds.values()) for (const f of sf.turns.values()) f.close()
    this.turnFeeds.clear()
    this.sessionFeeds.clear()
    this.controlListeners.clear()
    this.rings.clear()
    await Promise.all([this.cmd.quit().catch(() => { this.cmd.disconnect() }), this.sub.quit().catch(() => { this.sub.disconnect() })])
  }
}
