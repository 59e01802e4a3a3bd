/**
 * In-memory store: the embedded default until a durable store is configured. Copies on the way
 * in and out, so callers can never mutate stored state by accident.
 */
import type { SessionRecord, Store, TurnRecord } from './store.js'

export class MemoryStore implements Store {
  private readonly sessions = new Map<string, SessionRecord>()
  private readonly turns = new Map<string, TurnRecord>()

  async getSession (sessionId: string): Promise<SessionRecord | null> {
    const s = this.sessions.get(sessionId)
    return s === undefined ? null : structuredClone(s)
  }

  async saveSession (session: SessionRecord): Promise<void> {
    this.sessions.set(session.session_id, structuredClone(session))
  }

  async getTurn (turnId: string): Promise<TurnRecord | null> {
    const t = this.turns.get(turnId)
    return t === undefined ? null : structuredClone(t)
  }

  async saveTurn (turn: TurnRecord): Promise<void> {
    this.turns.set(turn.turn_id, structuredClone(turn))
  }

  async close (): Promise<void> {
    this.sessions.clear()
    this.turns.clear()
  }
}
