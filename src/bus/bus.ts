/**
 * Event bus: per-turn event logs with replay by seq, live fan-out by turn and by session, and a
 * control plane (approval answers, cancels) for turns that run on another instance. In-process
 * by default (memory.ts); the seam exists so many instances can share one bus.
 */
import type { EventEnvelope } from '../../schemas/events.js'

export interface BusEnvelope extends EventEnvelope {
  session_id: string
}

export type EnvelopeListener = (envelope: BusEnvelope) => void
export type Unsubscribe = () => void

export type ReplayResult =
  | { kind: 'events', events: BusEnvelope[] }
  /** Events after `afterSeq` are no longer retained: the client must refetch the turn. */
  | { kind: 'gap', firstSeq: number }
  | { kind: 'unknown' }

export type ControlMessage =
  | { type: 'cancel', turn_id: string, principal: string, reason: string }
  | { type: 'approval', request_id: string, principal: string, decision: 'yes' | 'no' | 'always' | 'edit', replacement?: string, decided_by: string, channel: string }

export interface EventBus {
  publish (envelope: BusEnvelope): void
  subscribeTurn (turnId: string, listener: EnvelopeListener): Unsubscribe
  subscribeSession (sessionId: string, listener: EnvelopeListener): Unsubscribe
  replay (turnId: string, afterSeq: number): Promise<ReplayResult>
  /** Forgets a finished turn's log (after its retention). */
  drop (turnId: string): void
  publishControl (message: ControlMessage): void
  onControl (listener: (message: ControlMessage) => void): Unsubscribe
  close (): Promise<void>
}
