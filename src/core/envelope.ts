/**
 * The sequenced event as the event log, the bus and the store all carry it. It lives here, in a
 * neutral module, so the store (which archives envelopes) and the bus (which fans them out) do not
 * import each other's types.
 */
import type { EventEnvelope } from '../../schemas/events.js'

/**
 * An event with what routes it to session subscribers: its turn's session, which is `session_id`
 * of `tenant` (session ids are unique within a tenant only; core/tenancy.ts). Neither is on the
 * wire (`wireEnvelope`). An envelope written before tenants qualified sessions is read back with
 * `LEGACY_TENANT` (no principal has an empty tenant): it still replays, and reaches no session
 * subscriber.
 */
export interface BusEnvelope extends EventEnvelope {
  session_id: string
  tenant: string
}

export const LEGACY_TENANT = ''

/**
 * What a client receives of an envelope: its four wire fields (schemas/events.ts EventEnvelope),
 * named rather than copied minus the routing fields, since every streamed delta pays this and a
 * rest copy cost more than the rest of an SSE frame.
 */
export function wireEnvelope (e: BusEnvelope): EventEnvelope {
  return { turn_id: e.turn_id, seq: e.seq, ts: e.ts, event: e.event }
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
