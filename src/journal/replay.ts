/**
 * A replay of a turn's events from two copies: the bus's (bounded per turn; empty after a
 * restart of the memory bus; gone where Redis lost its streams) and the store's event log (behind
 * the bus by the events still being written). The answer is the run after `afterSeq` without a
 * hole, whichever copy has it, or a gap where neither does.
 */
import type { EventLog, ReplayResult } from '../bus/bus.js'
import { contiguousAfter } from '../bus/contiguous.js'
import type { BusEnvelope } from '../core/envelope.js'
import type { Store } from '../store/store.js'

// How long a replay waits for this process's own pending event-log writes before answering.
const STORED_TAIL_WAIT_MS = 1000

export interface ReplaySources {
  bus: Pick<EventLog, 'replay'>
  store: Pick<Store, 'readEvents'>
  /** Upper bound of one read of the store. */
  maxEvents: number
  /** Resolves once this process's pending event-log writes are done, or after `ms`. */
  settled: (ms: number) => Promise<void>
}

/**
 * The bus's copy when it has the events after `afterSeq` (with a tail from the store up to
 * `knownLastSeq`, when the caller knows of more), else the store's, stitched to what the bus
 * holds after it.
 */
export async function replayFilled (
  sources: ReplaySources, turnId: string, afterSeq: number, knownLastSeq?: number
): Promise<ReplayResult> {
  const { bus, store, maxEvents } = sources
  let live: ReplayResult | null = null
  let liveError: unknown = null
  try {
    live = await bus.replay(turnId, afterSeq)
  } catch (err) {
    liveError = err
  }
  if (live?.kind === 'events') return await withStoredTail(sources, turnId, live.events, afterSeq, knownLastSeq)
  let stored: BusEnvelope[]
  try {
    stored = await store.readEvents(turnId, afterSeq, maxEvents)
  } catch (err) {
    if (live !== null) return live
    throw liveError ?? err
  }
  const head = contiguousAfter(stored, afterSeq)
  if (head.length === 0) {
    if (stored[0] !== undefined) return { kind: 'gap', firstSeq: stored[0].seq }
    if (live !== null) return live
    throw liveError
  }
  // The store may lag the bus by the events still being written: stitch them on.
  const last = head.at(-1)?.seq ?? afterSeq
  const tail = await bus.replay(turnId, last).catch(() => null)
  if (tail?.kind === 'events') return { kind: 'events', events: [...head, ...tail.events] }
  // The bus kept later events but not these: serving the head would hide a hole.
  if (live?.kind === 'gap' && tail?.kind === 'gap' && tail.firstSeq > last + 1) return { kind: 'gap', firstSeq: last + 1 }
  return { kind: 'events', events: head }
}

/**
 * The bus writes asynchronously (Redis): right after a publish its copy can end short of
 * what the caller knows was published. The store has it once this process's writes are done.
 */
async function withStoredTail (
  sources: ReplaySources, turnId: string, events: BusEnvelope[], afterSeq: number, knownLastSeq: number | undefined
): Promise<ReplayResult> {
  const last = events.at(-1)?.seq ?? afterSeq
  if (knownLastSeq === undefined || knownLastSeq <= last) return { kind: 'events', events }
  await sources.settled(STORED_TAIL_WAIT_MS)
  const stored = await sources.store.readEvents(turnId, last, sources.maxEvents).catch(() => [])
  return { kind: 'events', events: [...events, ...contiguousAfter(stored, last)] }
}
