/**
 * Scopes of WebSocket frames. The socket itself only needs a valid principal; each frame then
 * needs the scope its HTTP counterpart needs, so a read-only token cannot start, cancel or approve.
 */
import type { ClientFrameType } from '../../schemas/ws.js'
import type { Scope } from './principal.js'

export const FRAME_SCOPES: Readonly<Record<ClientFrameType, Scope | null>> = {
  hello: null,
  ping: null,
  unsubscribe: null,
  subscribe: 'turns:read',
  'turn.start': 'turns:write',
  cancel: 'turns:write',
  'turn.steer': 'turns:write',
  'approval.respond': 'approvals:answer',
  'tool.result': 'turns:write'
}
