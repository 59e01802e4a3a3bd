/**
 * Event bus: per-turn event logs with replay by seq, live fan-out by turn and by session, and a
 * control plane (approval answers, cancels, backchannel probes) for turns that run on another
 * instance. In-process by default (memory.ts); Redis (redis.ts) lets many instances share one.
 */
import type { BusEnvelope, CheckpointRow } from '../core/envelope.js'
import type { FinishedTurn, TurnRecord } from '../store/store.js'

export type { BusEnvelope }

export type EnvelopeListener = (envelope: BusEnvelope) => void
export type Unsubscribe = () => void

export type ReplayResult =
  | { kind: 'events', events: BusEnvelope[] }
  /** Events after `afterSeq` are no longer retained: the client must refetch the turn. */
  | { kind: 'gap', firstSeq: number }
  | { kind: 'unknown' }

/** Set on requests that expect an answer: `from` is the asking instance, `id` pairs the reply. */
export interface ControlRpcHeader {
  rpc?: { id: string, from: string }
}

export type ControlRequest =
  | { type: 'cancel', turn_id: string, principal: string, reason: string }
  | { type: 'approval', request_id: string, principal: string, decision: 'yes' | 'no' | 'always' | 'edit', replacement?: string, reason?: string, decided_by: string, channel: string }
  /** Does a live connection of `principal` watch this turn or its session (an approval backchannel)? */
  | { type: 'watching', turn_id: string, session_id: string, principal: string }
  /** A steering message for a turn running on the instance that answers (`steered` in its reply). */
  /** `principal` sent it; `steerer`: the front door checked its `turns:steer` (it may not own the turn). */
  | { type: 'steer', turn_id: string, principal: string, message: string, steerer?: true }

/** An instance's answer to a request; `handled: false` means "not mine" (so the asker can stop early). */
export interface ControlReply {
  type: 'reply'
  id: string
  to: string
  from: string
  handled: boolean
  error?: string
  turn_id?: string
  status?: string
  /** The answer to `steer`: the `user.message` event's seq, its place, how many wait. */
  steered?: { seq: number, n: number, queued: number }
}

export type ControlMessage = (ControlRequest & ControlRpcHeader) | ControlReply

/** The per-turn event log and its live fan-out: what turns publish and followers replay and watch. */
export interface EventLog {
  /**
   * Never throws; events are sequenced by the caller (seq from 1, no gaps, in order). `stored`:
   * the caller already wrote this event, and every earlier one of its turn, to the store's event
   * log in a transaction of its own (see `unwritten`); a bus that archives events fans them out
   * at once and does not write them again. Other buses ignore it.
   */
  publish (envelope: BusEnvelope, stored?: boolean): void
  /**
   * For a bus that writes every event to the store's event log (the archiving bus): the turn's
   * published events it has not written yet, which a caller about to write the turn in one
   * transaction may write along (and then publish its next event `stored`). Null when this bus
   * does not write the store's event log, or when events of the turn are still on their way to
   * it (a write under way or queued for retry), so a write of later ones could land first.
   */
  unwritten (turnId: string): readonly BusEnvelope[] | null
  subscribeTurn (turnId: string, listener: EnvelopeListener): Unsubscribe
  /** Live events of the turns of the session `sessionId` of `tenant` (no replay). */
  subscribeSession (tenant: string, sessionId: string, listener: EnvelopeListener): Unsubscribe
  /**
   * `knownLastSeq`, when the caller knows the turn reached it (its saved record), lets a bus that
   * keeps a second copy (the archiving bus) fill a tail the first copy has not written yet.
   */
  replay (turnId: string, afterSeq: number, knownLastSeq?: number): Promise<ReplayResult>
  /** Highest seq recorded for the turn, 0 if none: where a crashed owner's turn is continued. */
  lastSeq (turnId: string): Promise<number>
  /** Forgets a finished turn's log (after its retention). */
  drop (turnId: string): void
  /**
   * The turn has ended. A bus whose finished-turn logs are kept elsewhere as well (the archiving
   * bus over the in-process one: the store answers their replays) forgets its in-memory copy now
   * rather than at `drop`; the others keep theirs until then. Returns whether the bus still
   * holds the turn's log, to be forgotten by `drop` after the retention.
   */
  ended (turnId: string): boolean
  /**
   * Stores a durable turn's checkpoint in the same write as the events published in this
   * synchronous run (or alone, if none). Only a log kept in a store offers it.
   */
  checkpoint?: (row: CheckpointRow) => void
  /** Resolves once the events published so far are stored (a durable turn waits for it before a tool starts). */
  written?: () => Promise<void>
  /**
   * Writes a finished turn's record and session with its terminal event `closing` (which it then
   * publishes) and the turn's events still unwritten, in a write shared with other turns; null
   * when this bus does not (the caller saves and publishes them itself).
   */
  finish?: (save: FinishedTurn, closing: BusEnvelope) => Promise<void> | null
  /**
   * Saves a running turn's record with the events published so far: in their write (a synchronous
   * store: this tick's group, one transaction) or right after it, never ahead of it, so the stored
   * record never claims an event (`last_seq`, an approval's audit) the log does not hold. Resolves
   * once it is stored; rejects when the store refused it. Only a log kept in a store offers it.
   */
  saveTurn?: (turn: TurnRecord) => Promise<void>
}

/** The cross-instance control plane: it only publishes and subscribes; cluster/control.ts adds request/reply. */
export interface ControlPlane {
  /** True when other gateway instances share this bus, so control messages can reach them. */
  readonly shared: boolean
  publishControl (message: ControlMessage): void
  onControl (listener: (message: ControlMessage) => void): Unsubscribe
}

/** One backing service (memory or Redis) serves both interfaces; callers should ask for the one they use. */
export interface EventBus extends EventLog, ControlPlane {
  /** Since when (epoch ms) the bus's backing service has been unreachable; null while it is reachable. */
  unreachableSince (): number | null
  close (): Promise<void>
}
