/**
 * The gateway's own in-process bus, with the moment each event of a watched turn is handed to it
 * recorded on the shared monotonic clock: fan-out latency is then measured from the emitting side
 * to each subscriber's receipt, not from the millisecond `ts` on the wire.
 */
import type { BusEnvelope } from '../src/bus/bus.js'
import { MemoryEventBus } from '../src/bus/memory.js'
import { monotonicNs } from './ipc.js'

export class TimedEventBus extends MemoryEventBus {
  private readonly watched = new Map<string, Array<[number, bigint]>>()

  watch (turnId: string): void {
    this.watched.set(turnId, [])
  }

  /** Emit times of a watched turn's events as [seq, ns], and stop watching it. */
  take (turnId: string): Array<[number, bigint]> {
    const emits = this.watched.get(turnId) ?? []
    this.watched.delete(turnId)
    return emits
  }

  override publish (envelope: BusEnvelope): void {
    if (this.watched.size > 0) this.watched.get(envelope.turn_id)?.push([envelope.seq, monotonicNs()])
    super.publish(envelope)
  }
}
