/**
 * One event reaches every stream or socket following its turn as the same envelope object, and
 * the bus hands it to them one after another in a single synchronous fan-out: remembering the
 * last envelope encoded is enough to encode it once, not once per subscriber. A one-entry cache
 * rather than a WeakMap: a WeakMap insert per event (and the GC's ephemeron work behind it) cost
 * more than encoding a text delta once for its usual single reader.
 */
import type { BusEnvelope } from '../core/envelope.js'

export function encodeOnce (encode: (envelope: BusEnvelope) => string): (envelope: BusEnvelope) => string {
  let last: BusEnvelope | null = null
  let text = ''
  return (envelope) => {
    if (envelope !== last) {
      text = encode(envelope)
      last = envelope
    }
    return text
  }
}
