/**
 * The sequenced event as the event log, the bus and the store all carry it. It lives here, in a
 * neutral module, so the store (which archives envelopes) and the bus (which fans them out) do not
 * import each other's types.
 */
import type { EventEnvelope } from '../../schemas/events.js'

export interface BusEnvelope extends EventEnvelope {
  session_id: string
}

/**
 * A durable turn's checkpoint as the event log carries it to the store: written with the events
 * of the step it follows, in one transaction. The store keeps the latest per turn and never reads
 * `doc` (the turn service's format).
 */
export interface CheckpointRow {
  turn_id: string
  /** The turn's last seq when the checkpoint was taken. */
  seq: number
  doc: string
}
