/**
 * Wraps the gateway's turn journal (the very one createJournal() builds for the configuration)
 * and records, on the shared monotonic clock, the moment each event of a watched turn is handed
 * to it: fan-out latency is then measured from the emitting side to each subscriber's receipt,
 * and includes persisting the event, as it does in production.
 */
import type { ReplayResult } from '../src/bus/bus.js'
import type { BusEnvelope, CheckpointRow } from '../src/core/envelope.js'
import type { TurnJournal } from '../src/journal/journal.js'
import type { FinishedTurn, TurnRecord } from '../src/store/store.js'
import { monotonicNs } from './ipc.js'

export class TimedJournal implements TurnJournal {
  private readonly watched = new Map<string, Array<[number, bigint]>>()

  constructor (private readonly inner: TurnJournal) {}

  get keepsEvents (): boolean {
    return this.inner.keepsEvents
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

  append (envelope: BusEnvelope): void {
    this.stamp(envelope)
    this.inner.append(envelope)
  }

  appendStored (envelope: BusEnvelope): void {
    this.stamp(envelope)
    this.inner.appendStored(envelope)
  }

  unwritten (turnId: string): readonly BusEnvelope[] | null {
    return this.inner.unwritten(turnId)
  }

  checkpoint (row: CheckpointRow): void {
    this.inner.checkpoint(row)
  }

  async written (): Promise<void> {
    await this.inner.written()
  }

  finish (save: FinishedTurn, closing: BusEnvelope): Promise<void> | null {
    const joined = this.inner.finish(save, closing)
    // Handed over here only when the journal takes it; otherwise the caller appends it later.
    if (joined !== null) this.stamp(closing)
    return joined
  }

  async saveTurn (turn: TurnRecord): Promise<void> {
    await this.inner.saveTurn(turn)
  }

  async replay (turnId: string, afterSeq: number, knownLastSeq?: number): Promise<ReplayResult> {
    return await this.inner.replay(turnId, afterSeq, knownLastSeq)
  }

  async lastSeq (turnId: string): Promise<number> {
    return await this.inner.lastSeq(turnId)
  }

  ended (turnId: string): boolean {
    return this.inner.ended(turnId)
  }

  async close (): Promise<void> {
    await this.inner.close()
  }
}
