/**
 * The sequenced event as the event log, the bus and the store all carry it. It lives here, in a
 * neutral module, so the store (which archives envelopes) and the bus (which fans them out) do not
 * import each other's types.
 */
import type { EventEnvelope } from '../../schemas/events.js'

export interface BusEnvelope extends EventEnvelope {
  session_id: string
}
