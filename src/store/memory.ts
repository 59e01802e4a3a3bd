/**
 * In-memory store: nothing survives the process (tests, throwaway runs). Copies on the way in
 * and out, so callers can never mutate stored state by accident. It is exclusive by nature:
 * its only instance is the process that holds it.
 */
import type { BusEnvelope } from '../core/envelope.js'
import { finishedMs } from './codec.js'
import { TERMINAL_TURN_STATUSES, type RunningTurn, type SessionRecord, type Store, type TurnRecord } from './store.js'

interface StoredTurn {
  turn: TurnRecord
  instanceId: string
  finishedAt: number | null
}

export class MemoryStore implements Store {
  readonly instanceId: string
  readonly exclusive = true
  private readonly sessions = new Map<string, SessionRecord>()
  private readonly turns = new Map<string, StoredTurn>()
  private readonly events = new Map<string, Map<number, BusEnvelope>>()
  private leaseExpires = 0

  constructor (options: { instanceId?: string } = {}) {
    this.instanceId = options.instanceId ?? 'local'
  }

  async getSession (sessionId: string): Promise<SessionRecord | null> {
    const s = this.sessions.get(sessionId)
    return s === undefined ? null : structuredClone(s)
  }

  async saveSession (session: SessionRecord): Promise<void> {
    this.sessions.set(session.session_id, structuredClone(session))
  }

  async getTurn (turnId: string): Promise<TurnRecord | null> {
    const t = this.turns.get(turnId)
    return t === undefined ? null : structuredClone(t.turn)
  }

  async saveTurn (turn: TurnRecord): Promise<void> {
    this.putTurn(turn)
  }

  private putTurn (turn: TurnRecord): void {
    const stored = this.turns.get(turn.turn_id)
    if (stored !== undefined && TERMINAL_TURN_STATUSES.has(stored.turn.status)) return
    this.turns.set(turn.turn_id, {
      turn: structuredClone(turn),
      instanceId: stored?.instanceId ?? this.instanceId,
      finishedAt: finishedMs(turn)
    })
  }

  async saveTurnAndSession (turn: TurnRecord, session: SessionRecord): Promise<void> {
    const copy = structuredClone(session)
    this.putTurn(turn)
    this.sessions.set(session.session_id, copy)
  }

  async appendEvents (events: readonly BusEnvelope[]): Promise<void> {
    for (const e of events) {
      let log = this.events.get(e.turn_id)
      if (log === undefined) {
        log = new Map()
        this.events.set(e.turn_id, log)
      }
      if (!log.has(e.seq)) log.set(e.seq, structuredClone(e))
    }
  }

  async readEvents (turnId: string, afterSeq: number, limit: number): Promise<BusEnvelope[]> {
    const log = this.events.get(turnId)
    if (log === undefined) return []
    return [...log.values()].filter((e) => e.seq > afterSeq).sort((a, b) => a.seq - b.seq).slice(0, limit).map((e) => structuredClone(e))
  }

  async lastEventSeq (turnId: string): Promise<number> {
    let max = 0
    for (const seq of this.events.get(turnId)?.keys() ?? []) max = Math.max(max, seq)
    return max
  }

  async prune (finishedBeforeMs: number): Promise<void> {
    for (const [turnId, stored] of this.turns) {
      if (stored.finishedAt !== null && stored.finishedAt < finishedBeforeMs) this.events.delete(turnId)
    }
  }

  async renewLease (ttlMs: number): Promise<void> {
    this.leaseExpires = Date.now() + ttlMs
  }

  async releaseLease (): Promise<void> {
    this.leaseExpires = 0
  }

  async liveInstances (): Promise<string[]> {
    return this.leaseExpires > Date.now() ? [this.instanceId] : []
  }

  async runningTurns (): Promise<RunningTurn[]> {
    return [...this.turns.values()]
      .filter((t) => t.turn.status === 'running')
      .map((t) => ({ turnId: t.turn.turn_id, instanceId: t.instanceId }))
  }

  async interruptTurn (turn: TurnRecord, instanceId: string | null): Promise<boolean> {
    const stored = this.turns.get(turn.turn_id)
    if (stored === undefined || stored.turn.status !== 'running' || stored.instanceId !== instanceId) return false
    this.turns.set(turn.turn_id, { turn: structuredClone(turn), instanceId: stored.instanceId, finishedAt: finishedMs(turn) })
    return true
  }

  async close (): Promise<void> {
    this.sessions.clear()
    this.turns.clear()
    this.events.clear()
  }
}
