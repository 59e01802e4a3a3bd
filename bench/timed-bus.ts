/**
 * Wraps the gateway's bus (the very one createBus() builds for the configuration) and records,
 * on the shared monotonic clock, the moment each event of a watched turn is handed to it: fan-out
 * latency is then measured from the emitting side to each subscriber's receipt, and includes
 * persisting the event, as it does in production.
 */
import type { ControlMessage, EnvelopeListener, EventBus, ReplayResult, Unsubscribe } from '../src/bus/bus.js'
import type { BusEnvelope, CheckpointRow } from '../src/core/envelope.js'
import type { FinishedTurn } from '../src/store/store.js'
import { monotonicNs } from './ipc.js'

export class TimedEventBus implements EventBus {
  private readonly watched = new Map<string, Array<[number, bigint]>>()
  // Offered exactly when the wrapped bus offers them: the turn service makes turns durable only
  // on a bus that stores checkpoints, so dropping these would bench a non-default wiring.
  readonly checkpoint?: (row: CheckpointRow) => void
  readonly written?: () => Promise<void>
  readonly finish?: (save: FinishedTurn, closing: BusEnvelope) => Promise<void> | null

  constructor (private readonly inner: EventBus) {
    const { checkpoint, written, finish } = inner
    if (checkpoint !== undefined) this.checkpoint = (row) => { checkpoint.call(inner, row) }
    if (written !== undefined) this.written = async () => { await written.call(inner) }
    if (finish !== undefined) {
      this.finish = (save, closing) => {
        this.stamp(closing)
        return finish.call(inner, save, closing)
      }
    }
  }

  get shared (): boolean {
    return this.inner.shared
  }

  watch (turnId: string): void {
    this.watched.set(turnId, [])
  }

  /** Emit times of a watched turn's events as [seq, ns], and stop watching it. */
  take (turnId: string): Array<[number, bigint]> {
    const emits = this.watched.get(turnId) ?? []
    this.watched.delete(turnId)
    return emits
  }

  private stamp (envelope: BusEnvelope): void {
    if (this.watched.size > 0) this.watched.get(envelope.turn_id)?.push([envelope.seq, monotonicNs()])
  }

  publish (envelope: BusEnvelope, stored?: boolean): void {
    this.stamp(envelope)
    this.inner.publish(envelope, stored)
  }

  unwritten (turnId: string): readonly BusEnvelope[] | null {
    return this.inner.unwritten(turnId)
  }

  subscribeTurn (turnId: string, listener: EnvelopeListener): Unsubscribe {
    return this.inner.subscribeTurn(turnId, listener)
  }

  subscribeSession (tenant: string, sessionId: string, listener: EnvelopeListener): Unsubscribe {
    return this.inner.subscribeSession(tenant, sessionId, listener)
  }

  async replay (turnId: string, afterSeq: number, knownLastSeq?: number): Promise<ReplayResult> {
    return await this.inner.replay(turnId, afterSeq, knownLastSeq)
  }

  async lastSeq (turnId: string): Promise<number> {
    return await this.inner.lastSeq(turnId)
  }

  drop (turnId: string): void {
    this.inner.drop(turnId)
  }

  ended (turnId: string): boolean {
    return this.inner.ended(turnId)
  }

  publishControl (message: ControlMessage): void {
    this.inner.publishControl(message)
  }

  onControl (listener: (message: ControlMessage) => void): Unsubscribe {
    return this.inner.onControl(listener)
  }

  unreachableSince (): number | null {
    return this.inner.unreachableSince()
  }

  async close (): Promise<void> {
    await this.inner.close()
  }
}
