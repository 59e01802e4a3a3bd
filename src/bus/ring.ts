/**
 * A turn's recent events in seq order: bounded (oldest dropped first), contiguous, and able to
 * say whether it still covers a replay from a given seq. Used by every bus for the turns it holds.
 */
import type { BusEnvelope, ReplayResult } from './bus.js'

export class EventRing {
  private readonly events: BusEnvelope[] = []
  /** seq of events[0]. */
  private first = 0

  constructor (private readonly capacity: number) {}

  get firstSeq (): number {
    return this.first
  }

  get lastSeq (): number {
    return this.events.at(-1)?.seq ?? 0
  }

  push (envelope: BusEnvelope): void {
    if (this.events.length === 0) this.first = envelope.seq
    this.events.push(envelope)
    if (this.events.length > this.capacity) {
      this.events.shift()
      this.first += 1
    }
  }

  /** Whether every event after `afterSeq` that this ring has seen is still in it. */
  covers (afterSeq: number): boolean {
    return this.events.length > 0 && afterSeq + 1 >= this.first
  }

  replay (afterSeq: number): ReplayResult {
    if (!this.covers(afterSeq)) return { kind: 'gap', firstSeq: this.first }
    return { kind: 'events', events: this.events.slice(Math.max(0, afterSeq + 1 - this.first)) }
  }
}
