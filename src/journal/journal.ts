/**
 * The turn journal: where a running turn's events go. It writes them to the store's event log
 * (group commit, checkpoints, "stored before published") and then hands them to the event bus,
 * which only fans them out and replays them; a replay asked of the journal is filled from the
 * store where the bus no longer holds the events. Composed with a bus, not one: the bus knows
 * nothing of the store (decision 0209).
 *
 * Two journals: `StoredJournal` (stored-journal.ts) when the store keeps an event log, and
 * `BusJournal` (bus-journal.ts), which passes events straight to the bus, when it does not.
 */
import type { ReplayResult } from '../bus/bus.js'
import type { BusEnvelope, CheckpointRow } from '../core/envelope.js'
import type { FinishedTurn, TurnRecord } from '../store/store.js'

export interface TurnJournal {
  /**
   * True when events are written to the store's event log before they are published: checkpoints
   * are stored with them (a durable turn needs that), and a turn's creation writes its first
   * events in its own transaction (see `appendStored`).
   */
  readonly keepsEvents: boolean
  /** Never throws; events are sequenced by the caller (seq from 1, no gaps, in order). */
  append (envelope: BusEnvelope): void
  /**
   * The caller already wrote this event, and every earlier one of its turn, to the store's event
   * log in a transaction of its own (see `unwritten`): it goes out at once and is not written again.
   */
  appendStored (envelope: BusEnvelope): void
  /**
   * The turn's appended events not written yet, which a caller about to write the turn in one
   * transaction may write along (and then append its next event `appendStored`). Null when this
   * journal does not write the store's event log, or when events of the turn are still on their
   * way to it (a write under way or queued for retry), so a write of later ones could land first.
   */
  unwritten (turnId: string): readonly BusEnvelope[] | null
  /**
   * Stores a durable turn's checkpoint in the same write as the events appended in this
   * synchronous run (or alone, if none). Does nothing where `keepsEvents` is false.
   */
  checkpoint (row: CheckpointRow): void
  /** Resolves once the events appended so far are stored (a durable turn waits for it before a tool starts). */
  written (): Promise<void>
  /**
   * Writes a finished turn's record and session with its terminal event `closing` (which it then
   * publishes) and the turn's events still unwritten, in a write shared with other turns; null
   * when this journal does not (the caller saves and publishes them itself).
   */
  finish (save: FinishedTurn, closing: BusEnvelope): Promise<void> | null
  /**
   * Saves a running turn's record, never ahead of the events appended so far, so the stored record
   * never claims an event (`last_seq`, an approval's audit) the log does not hold. Resolves once
   * it is stored; rejects when the store refused it.
   */
  saveTurn (turn: TurnRecord): Promise<void>
  /**
   * The turn's events after `afterSeq`. `knownLastSeq`, when the caller knows the turn reached it
   * (its saved record), lets the journal fill from the store a tail the bus has not got yet.
   */
  replay (turnId: string, afterSeq: number, knownLastSeq?: number): Promise<ReplayResult>
  /** Highest seq recorded for the turn, 0 if none: where a crashed owner's turn is continued. */
  lastSeq (turnId: string): Promise<number>
  /**
   * The turn has ended. Returns whether the bus still holds the turn's log, to be forgotten by the
   * bus's `drop` after the retention; false when the journal had it forgotten already (the store
   * answers the finished turn's replays).
   */
  ended (turnId: string): boolean
  /** Writes what is pending and publishes what is held; the bus is closed after it, by its owner. */
  close (): Promise<void>
}
