/**
 * Per-principal running-turn slots shared by every instance through Redis, so
 * `turns.max_active_turns_per_principal` holds for the whole cluster, not per instance.
 *
 * A principal's slots are one sorted set (`<prefix>turn-slots:<principal>`): a member per running
 * turn, scored with the time its lease ends (Redis's clock, so instances' clocks do not matter).
 * Taking a slot drops expired members, counts, and adds, in one script: atomic across instances.
 * The instance running a turn renews its lease every `leaseMs / 3` and removes it as the turn
 * ends, before its terminal event goes out (so that whoever sees the end can start a turn on any
 * instance); a dead instance's turns stop being renewed and free their slots within `leaseMs`.
 *
 * Redis unreachable: the instance's own per-principal count (always checked) is the limit until
 * Redis is back — turns are not refused because the limiter cannot be asked.
 */
import { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { waitAtMost } from '../core/wait-at-most.js'

/** Redis time in milliseconds: `TIME` is allowed in scripts (effects replication, Redis ≥ 5). */
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])`

const ACQUIRE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + lease, ARGV[3])
redis.call('PEXPIRE', KEYS[1], lease)
return 1`

/** Re-adds a member Redis lost (a restart without persistence): a running turn keeps its slot. */
const RENEW = `${NOW}
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + lease, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], lease)
return 1`

/**
 * How long a turn's end waits for Redis to have its slot back (turn ends wait for it, so that a
 * client that saw the end can start a turn on any instance). A Redis that answers later still
 * frees it; one that never does leaves it to the lease.
 */
const RELEASE_WAIT_MS = 1000

export interface HeldSlot {
  owner: string
  turnId: string
}

export interface TurnSlots {
  /** Takes one of `owner`'s `limit` slots for `turnId`; false when all are taken cluster-wide. */
  acquire (owner: string, turnId: string, limit: number): Promise<boolean>
  /**
   * Gives the slot back (the turn ended, or never started). Settles once Redis has it, or after
   * RELEASE_WAIT_MS, or when Redis cannot be asked; never rejects.
   */
  release (owner: string, turnId: string): Promise<void>
  /** Names the turns whose leases this instance renews (its running turns). */
  track (held: () => Iterable<HeldSlot>): void
  close (): Promise<void>
}

export interface RedisTurnSlotsOptions {
  url: string
  keyPrefix: string
  leaseMs: number
  connectTimeoutMs: number
  log: Logger
}

type SlotCommands = Redis & {
  tollgateAcquireSlot: (key: string, leaseMs: number, limit: number, member: string) => Promise<number>
  tollgateRenewSlots: (key: string, leaseMs: number, ...members: string[]) => Promise<number>
}

export class RedisTurnSlots implements TurnSlots {
  private readonly options: RedisTurnSlotsOptions
  private readonly redis: SlotCommands
  private held: () => Iterable<HeldSlot> = () => []
  private readonly timer: NodeJS.Timeout

  private constructor (options: RedisTurnSlotsOptions, redis: SlotCommands) {
    this.options = options
    this.redis = redis
    this.timer = setInterval(() => { this.renew() }, Math.max(250, Math.floor(options.leaseMs / 3)))
    this.timer.unref()
  }

  static async connect (options: RedisTurnSlotsOptions): Promise<RedisTurnSlots> {
    const redis = new Redis(options.url, {
      lazyConnect: true,
      connectTimeout: options.connectTimeoutMs,
      // Fail fast while Redis is away: the local limit applies meanwhile.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
      connectionName: 'tollgate-turn-slots'
    })
    redis.on('error', (err: Error) => { options.log.debug({ err }, 'Redis connection error (turn slots)') })
    redis.defineCommand('tollgateAcquireSlot', { numberOfKeys: 1, lua: ACQUIRE })
    redis.defineCommand('tollgateRenewSlots', { numberOfKeys: 1, lua: RENEW })
    try {
      await redis.connect()
    } catch (err) {
      redis.disconnect()
      throw new Error(`cannot connect to Redis: ${(err as Error).message}`, { cause: err })
    }
    return new RedisTurnSlots(options, redis as SlotCommands)
  }

  private key (owner: string): string {
    return `${this.options.keyPrefix}turn-slots:${owner}`
  }

  async acquire (owner: string, turnId: string, limit: number): Promise<boolean> {
    try {
      return await this.redis.tollgateAcquireSlot(this.key(owner), this.options.leaseMs, limit, turnId) === 1
    } catch (err) {
      this.options.log.warn({ err }, 'Redis cannot count this principal\'s turns across instances; the local limit applies')
      return true
    }
  }

  async release (owner: string, turnId: string): Promise<void> {
    const removed = this.redis.zrem(this.key(owner), turnId).then(() => {}, (err: unknown) => {
      // Not renewed any more, so the slot frees itself when its lease ends.
      this.options.log.debug({ err }, 'could not release a turn slot; its lease will end it')
    })
    await waitAtMost(removed, RELEASE_WAIT_MS)
  }

  track (held: () => Iterable<HeldSlot>): void {
    this.held = held
  }

  /**
   * One script per principal, sent at once on the connection releases use too, so a release issued
   * later runs after it; a turn that ends mid-renewal holds its slot for one lease at worst.
   */
  private renew (): void {
    const byOwner = new Map<string, string[]>()
    for (const { owner, turnId } of this.held()) {
      const turns = byOwner.get(owner) ?? []
      turns.push(turnId)
      byOwner.set(owner, turns)
    }
    for (const [owner, turns] of byOwner) {
      this.redis.tollgateRenewSlots(this.key(owner), this.options.leaseMs, ...turns).catch((err: unknown) => {
        this.options.log.debug({ err }, 'could not renew turn slots')
      })
    }
  }

  async close (): Promise<void> {
    clearInterval(this.timer)
    // QUIT after the releases already sent, so a clean stop leaves no slot behind.
    await this.redis.quit().catch(() => { this.redis.disconnect() })
  }
}
