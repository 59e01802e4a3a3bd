/**
 * This instance's lease and the sweep that ends orphaned turns, at start and every
 * `leaseMs / 3`. A turn still `running` in the store is an orphan when nobody can finish it:
 * - it is "mine" (any turn of an exclusive store — memory, SQLite: no other process can hold
 *   it — or one saved under this instance's id) and not running in this process. A turn is in
 *   the process's active set from before its first save until after its terminal save, so this
 *   is a previous incarnation's turn, or one whose terminal save failed;
 * - or its instance's lease has expired.
 * A live instance's turns are never touched, whoever restarts: its lease is current.
 */
import type { Logger } from 'pino'
import type { EventBus } from '../bus/bus.js'
import type { TurnJournal } from '../journal/journal.js'
import type { RunningTurn, Store } from '../store/store.js'
import { interruptOrphan } from './recovery.js'

const PRUNE_EVERY_MS = 3_600_000

export interface InstanceLeaseOptions {
  store: Store
  /** Forgets an ended orphan's log after the retention. */
  bus: EventBus
  /** Reads an orphan's log and stores and publishes the events that end it. */
  journal: TurnJournal
  leaseMs: number
  /** 0 keeps persisted events. */
  eventRetentionMs: number
  /** How long the bus keeps the log of a turn this instance ended (turns.retention_ms). */
  retentionMs: number
  /** Turns running in this process right now (never orphans). */
  isLocal: (turnId: string) => boolean
  /**
   * Continues an orphan from its checkpoint on this instance (durable turns); false: it cannot,
   * and the orphan is interrupted.
   */
  resume?: (orphan: RunningTurn) => Promise<boolean>
  log: Logger
}

export class InstanceLease {
  private readonly options: InstanceLeaseOptions
  private timer: NodeJS.Timeout | undefined
  private readonly drops = new Set<NodeJS.Timeout>()
  private ticking: Promise<void> | null = null
  private lastPrune = 0
  private closed = false
  /** When the store last accepted this instance's lease renewal. */
  private renewedAt = Date.now()

  private constructor (options: InstanceLeaseOptions) {
    this.options = options
  }

  /** Takes the lease and ends the orphans found at start, before the instance serves anyone. */
  static async start (options: InstanceLeaseOptions): Promise<InstanceLease> {
    const lease = new InstanceLease(options)
    await options.store.renewLease(options.leaseMs)
    lease.renewedAt = Date.now()
    await lease.sweep()
    await lease.prune()
    lease.timer = setInterval(() => { lease.tick() }, Math.max(250, Math.floor(options.leaseMs / 3)))
    lease.timer.unref()
    return lease
  }

  private tick (): void {
    if (this.ticking !== null || this.closed) return
    this.ticking = (async () => {
      try {
        await this.options.store.renewLease(this.options.leaseMs)
        this.renewedAt = Date.now()
      } catch (err) {
        this.options.log.warn({ err }, 'could not renew this instance\'s lease')
      }
      try {
        await this.sweep()
        if (Date.now() - this.lastPrune >= PRUNE_EVERY_MS) await this.prune()
      } catch (err) {
        this.options.log.warn({ err }, 'orphaned-turn sweep failed')
      }
    })().finally(() => { this.ticking = null })
  }

  /**
   * Whether this instance still holds its lease: the store accepted a renewal within the lease
   * time. Past that, other instances may end this instance's turns as orphans, and the store is
   * evidently unreachable, so the instance should stop taking traffic.
   */
  held (): boolean {
    return Date.now() - this.renewedAt < this.options.leaseMs
  }

  /** Ends the running turns nobody can finish any more; answers how many it ended. */
  async sweep (): Promise<number> {
    const { store, journal, log, isLocal } = this.options
    const running = await store.runningTurns()
    if (running.length === 0) return 0
    const live = new Set(await store.liveInstances())
    let ended = 0
    for (const orphan of running) {
      if (this.closed || isLocal(orphan.turnId)) continue
      const mine = store.exclusive || orphan.instanceId === store.instanceId
      const dead = orphan.instanceId === null || !live.has(orphan.instanceId)
      if (!mine && !dead) continue
      if (await this.resumed(orphan)) continue
      if (!await interruptOrphan({ store, journal, log }, orphan)) continue
      ended++
      this.dropLater(orphan.turnId)
    }
    return ended
  }

  private async resumed (orphan: RunningTurn): Promise<boolean> {
    const { resume, log } = this.options
    if (resume === undefined) return false
    try {
      return await resume(orphan)
    } catch (err) {
      log.error({ err, turn_id: orphan.turnId }, 'could not resume an orphaned turn; interrupting it')
      return false
    }
  }

  /** The bus forgets an ended orphan's log after the retention, as for a turn that ran here. */
  private dropLater (turnId: string): void {
    const timer = setTimeout(() => {
      this.drops.delete(timer)
      this.options.bus.drop(turnId)
    }, this.options.retentionMs)
    timer.unref()
    this.drops.add(timer)
  }

  private async prune (): Promise<void> {
    this.lastPrune = Date.now()
    await this.options.store.pruneIdempotency(Date.now())
    await this.options.store.pruneCheckpoints()
    if (this.options.eventRetentionMs > 0) await this.options.store.prune(Date.now() - this.options.eventRetentionMs)
  }

  /** Stops renewing and gives the lease up (a clean stop leaves no turn to recover). */
  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearInterval(this.timer)
    for (const t of this.drops) clearTimeout(t)
    this.drops.clear()
    await this.ticking
    await this.options.store.releaseLease().catch((err: unknown) => { this.options.log.warn({ err }, 'could not release this instance\'s lease') })
  }
}
