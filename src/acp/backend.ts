/**
 * What the ACP agent needs of a Tollgate gateway: start a turn in a session and follow its events,
 * answer an approval, cancel, steer, and read a session's history. The stdio command implements
 * it over the WebSocket protocol (client/acp.ts); `/v1/acp` in the gateway itself (acp-socket.ts).
 */
import type { EventEnvelope } from '../../schemas/events.js'
import type { HistoryMessage } from '../../schemas/session.js'

export interface AcpAnswer {
  decision: 'yes' | 'no' | 'always' | 'edit'
  replacement?: string
}

export interface AcpTurn {
  turnId: string
  /** The turn's events from its first, ending after the terminal event. */
  events: AsyncIterable<EventEnvelope>
}

export interface AcpBackend {
  startTurn (request: { message: string, sessionId: string, agent?: string }): Promise<AcpTurn>
  /** `replacement` with `edit` only: the text that becomes the call's result instead of running it. */
  answer (requestId: string, answer: AcpAnswer): Promise<void>
  cancel (turnId: string): Promise<void>
  /**
   * Resolves once the ended turn has released its session: its terminal event goes out just
   * before, and the session's next turn would be refused with SESSION_BUSY until then.
   */
  released (turnId: string): Promise<void>
  steer (turnId: string, message: string): Promise<void>
  /** The session's stored history; null when the principal has no such session. */
  history (sessionId: string): Promise<HistoryMessage[] | null>
}
