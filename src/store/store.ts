/**
 * Store seam: sessions (history and `always` grants) and turns (status, tool calls, approval
 * audit). Records are owned by a principal; callers check ownership, the store just keeps them.
 */
import type { ChatMessage } from '../providers/types.js'
import type { Turn } from '../../schemas/turn.js'

export interface SessionRecord {
  session_id: string
  owner: string
  agent: string
  created_at: string
  updated_at: string
  turn_ids: string[]
  history: ChatMessage[]
  always_allowed: string[]
}

export interface TurnRecord extends Turn {
  owner: string
}

export interface Store {
  getSession (sessionId: string): Promise<SessionRecord | null>
  saveSession (session: SessionRecord): Promise<void>
  getTurn (turnId: string): Promise<TurnRecord | null>
  saveTurn (turn: TurnRecord): Promise<void>
  close (): Promise<void>
}
