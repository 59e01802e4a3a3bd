/**
 * Following a turn's events: replay what the client missed after `afterSeq`, then live events,
 * in seq order with no gap and no duplicate. Live events that arrive during the replay are held
 * back and released after it. Every transport (WS, SSE, long-poll) uses this one function.
 */
import { TERMINAL_EVENT_KINDS } from '../../schemas/events.js'
import type { BusEnvelope, EventLog, Unsubscribe } from '../bus/bus.js'
import type { TurnJournal } from '../journal/journal.js'

export type FollowResult =
  | { kind: 'following', unsubscribe: Unsubscribe, lastSeq: number }
  | { kind: 'gap', firstSeq: number }

export interface FollowOptions {
  /** Live events. */
  bus: Pick<EventLog, 'subscribeTurn'>
  /** The replay of what was missed: the bus's, filled from the store where it keeps an event log. */
  journal: Pick<TurnJournal, 'replay'>
  turnId: string
  afterSeq: number
  /** The turn's last known seq, to tell "nothing yet" from "log already dropped". */
  knownLastSeq: number
  deliver: (envelope: BusEnvelope) => void
  /** Called once after the terminal event was delivered. */
  onEnd?: () => void
}

/**
 * Delivers each event once, in seq order after `afterSeq`, and tells `onEnd` after the terminal
 * one. A terminal event at or before `afterSeq` is not delivered (the client says it has it) but
 * still ends the follow: a resume point at or past the turn's end must not outlive the turn.
 */
function passer (options: Pick<FollowOptions, 'afterSeq' | 'deliver' | 'onEnd'>): { pass: (envelope: BusEnvelope) => void, lastSeq: () => number } {
  let lastSeq = options.afterSeq
  let ended = false
  return {
    pass: (envelope) => {
      if (ended) return
      const terminal = TERMINAL_EVENT_KINDS.has(envelope.event.kind)
      if (envelope.seq > lastSeq) {
        lastSeq = envelope.seq
        options.deliver(envelope)
      } else if (!terminal) {
        return
      }
      if (terminal) {
        ended = true
        options.onEnd?.()
      }
    },
    lastSeq: () => lastSeq
  }
}

/**
 * Following a turn from before its first event was published (its owner socket, subscribed by
 * the turn's start): nothing can have been missed, so there is no replay and no await — the
 * first event goes out the moment it is published.
 */
export function followFromStart (options: Pick<FollowOptions, 'bus' | 'turnId' | 'deliver' | 'onEnd'>): Unsubscribe {
  const { pass } = passer({ ...options, afterSeq: 0 })
  return options.bus.subscribeTurn(options.turnId, pass)
}

export async function followTurn (options: FollowOptions): Promise<FollowResult> {
  const { bus, journal, turnId } = options
  const { pass, lastSeq } = passer(options)
  let held: BusEnvelope[] | null = []
  const unsubscribe = bus.subscribeTurn(turnId, (envelope) => {
    if (held !== null) held.push(envelope)
    else pass(envelope)
  })
  // A resume point past the turn's last known seq replays from that seq instead: a terminal
  // event published since it was known (before the subscription) is then seen, and ends the
  // follow, instead of being missed by both the replay and the subscription.
  const from = Math.min(options.afterSeq, options.knownLastSeq)
  const replay = await journal.replay(turnId, from, options.knownLastSeq)
  if (replay.kind === 'gap' || (replay.kind === 'unknown' && options.knownLastSeq > from)) {
    unsubscribe()
    return { kind: 'gap', firstSeq: replay.kind === 'gap' ? replay.firstSeq : options.knownLastSeq + 1 }
  }
  if (replay.kind === 'events') for (const envelope of replay.events) pass(envelope)
  const pending = held
  held = null
  for (const envelope of pending) pass(envelope)
  return { kind: 'following', unsubscribe, lastSeq: lastSeq() }
}
