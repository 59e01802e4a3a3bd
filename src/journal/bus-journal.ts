/**
 * The journal of a gateway whose store keeps no event log (the memory store, or
 * `store.event_log = false`): events go straight to the bus, which alone replays them, and a
 * running turn's record is saved on its own. No turn is durable over it (`keepsEvents` is false).
 */
import type { EventLog, ReplayResult } from '../bus/bus.js'
import type { BusEnvelope } from '../core/envelope.js'
import type { Store, TurnRecord } from '../store/store.js'
import type { TurnJournal } from './journal.js'

export class BusJournal implements TurnJournal {
  readonly keepsEvents = false

  constructor (private readonly bus: EventLog, private readonly store: Pick<Store, 'saveTurn'>) {}

  append (envelope: BusEnvelope): void {
    this.bus.publish(envelope)
  }

  appendStored (envelope: BusEnvelope): void {
    this.bus.publish(envelope)
  }

  /** Writes no event log: nothing of a turn is ever waiting to be written here. */
  unwritten (): null {
    return null
  }

  /** Never asked: without an event log no turn is durable. */
  checkpoint (): void {}

  async written (): Promise<void> {}

  finish (): null {
    return null
  }

  async saveTurn (turn: TurnRecord): Promise<void> {
    await this.store.saveTurn(turn)
  }

  async replay (turnId: string, afterSeq: number): Promise<ReplayResult> {
    return await this.bus.replay(turnId, afterSeq)
  }

  async lastSeq (turnId: string): Promise<number> {
    return await this.bus.lastSeq(turnId)
  }

  /** Kept by the bus until `drop`: without a store behind it, the bus's log replays a finished turn. */
  ended (): boolean {
    return true
  }

  async close (): Promise<void> {}
}
