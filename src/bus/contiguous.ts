/** Joining events from two copies of a turn's log (a bus's and the store's) without hiding a hole. */
import type { BusEnvelope } from '../core/envelope.js'

/** The run of events that follows `afterSeq` without a hole. */
export function contiguousAfter (events: readonly BusEnvelope[], afterSeq: number): BusEnvelope[] {
  const out: BusEnvelope[] = []
  for (const e of events) {
    if (e.seq !== afterSeq + out.length + 1) break
    out.push(e)
  }
  return out
}
