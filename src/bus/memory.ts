/**
 * In-process event bus: a bounded ring of envelopes per turn (oldest dropped first; a replay
 * that reaches past the ring answers `gap`) and synchronous fan-out to listeners.
 */
import { sessionKey } from '../core/tenancy.js'
import type { BusEnvelope, ControlMessage, EnvelopeListener, EventBus, ReplayResult, Unsubscribe } from './bus.js'
import { EventRing } from './ring.js'

function addListener<T> (map: Map<string, Set<T>>, key: string, listener: T): Unsubscribe {
  let set = map.get(key)
  if (set === undefined) {
    set = new Set()
    map.set(key, set)
  }
  set.add(listener)
  return () => {
    const current = map.get(key)
    if (current === undefined) return
    current.delete(listener)
    if (current.size === 0) map.delete(key)
  }
}

export class MemoryEventBus implements EventBus {
  readonly shared = false
  private readonly logs = new Map<string, EventRing>()
  private readonly turnListeners = new Map<string, Set<EnvelopeListener>>()
  /** By sessionKey(tenant, session id). */
  private readonly sessionListeners = new Map<string, Set<EnvelopeListener>>()
  private readonly controlListeners = new Set<(message: ControlMessage) => void>()
  private readonly maxEventsPerTurn: number
  private readonly onListenerError: (err: unknown) => void

  constructor (options: { maxEventsPerTurn: number, onListenerError: (err: unknown) => void }) {
    this.maxEventsPerTurn = options.maxEventsPerTurn
    this.onListenerError = options.onListenerError
  }

  publish (envelope: BusEnvelope): void {
    let log = this.logs.get(envelope.turn_id)
    if (log === undefined) {
      log = new EventRing(this.maxEventsPerTurn)
      this.logs.set(envelope.turn_id, log)
    }
    log.push(envelope)
    this.fanOut(this.turnListeners.get(envelope.turn_id), envelope)
    // Per event: the session's key is built only when some session has a listener.
    if (this.sessionListeners.size > 0) this.fanOut(this.sessionListeners.get(sessionKey(envelope.tenant, envelope.session_id)), envelope)
  }

  private fanOut (listeners: Set<EnvelopeListener> | undefined, envelope: BusEnvelope): void {
    if (listeners === undefined) return
    // A listener may subscribe or unsubscribe others: the ones of this moment get the event. One
    // listener (the usual case) is called without copying the set.
    if (listeners.size === 1) {
      this.call(listeners.values().next().value as EnvelopeListener, envelope)
      return
    }
    for (const listener of [...listeners]) this.call(listener, envelope)
  }

  private call (listener: EnvelopeListener, envelope: BusEnvelope): void {
    try {
      listener(envelope)
    } catch (err) {
      this.onListenerError(err)
    }
  }

  subscribeTurn (turnId: string, listener: EnvelopeListener): Unsubscribe {
    return addListener(this.turnListeners, turnId, listener)
  }

  subscribeSession (tenant: string, sessionId: string, listener: EnvelopeListener): Unsubscribe {
    return addListener(this.sessionListeners, sessionKey(tenant, sessionId), listener)
  }

  async replay (turnId: string, afterSeq: number): Promise<ReplayResult> {
    const log = this.logs.get(turnId)
    if (log === undefined) return { kind: 'unknown' }
    return log.replay(afterSeq)
  }

  async lastSeq (turnId: string): Promise<number> {
    return this.logs.get(turnId)?.lastSeq ?? 0
  }

  drop (turnId: string): void {
    this.logs.delete(turnId)
  }

  unreachableSince (): number | null {
    return null
  }

  publishControl (message: ControlMessage): void {
    for (const listener of [...this.controlListeners]) {
      try {
        listener(message)
      } catch (err) {
        this.onListenerError(err)
      }
    }
  }

  onControl (listener: (message: ControlMessage) => void): Unsubscribe {
    this.controlListeners.add(listener)
    return () => { this.controlListeners.delete(listener) }
  }

  async close (): Promise<void> {
    this.logs.clear()
    this.turnListeners.clear()
    this.sessionListeners.clear()
    this.controlListeners.clear()
  }
}
