/**
 * Event bus: per-turn event logs with replay by seq, live fan-out by turn and by session, and a
 * control plane (approval answers, cancels, backchannel probes) for turns that run on another
 * instance. In-process by default (memory.ts); Redis (redis.ts) lets many instances share one.
 */
import type { BusEnvelope } from '../core/envelope.js'

export type { BusEnvelope }

/**
 * A second copy of turns' events (the store's event log) a bus may read to fill a hole in its
 * own: events of `turnId` after `afterSeq`, at most `limit`. Handed in by the composition root.
 */
export type EventArchive = (turnId: string, afterSeq: number, limit: number) => Promise<BusEnvelope[]>

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

/**
 * The per-turn event log and its live fan-out: what turns publish and followers replay and watch.
 * Fan-out and replay only: writing events to the store, and filling replays from it, is the turn
 * journal's (src/journal/), which publishes here once an event is stored.
 */
export interface EventLog {
  /** Never throws; events are sequenced by the caller (seq from 1, no gaps, in order). */
  publish (envelope: BusEnvelope): void
  subscribeTurn (turnId: string, listener: EnvelopeListener): Unsubscribe
  /** Live events of the turns of the session `sessionId` of `tenant` (no replay). */
  subscribeSession (tenant: string, sessionId: string, listener: EnvelopeListener): Unsubscribe
  replay (turnId: string, afterSeq: number): Promise<ReplayResult>
  /** Highest seq this bus holds for the turn, 0 if none. */
  lastSeq (turnId: string): Promise<number>
  /** Forgets a finished turn's log (after its retention). */
  drop (turnId: string): void
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
