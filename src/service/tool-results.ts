/**
 * A client tool's result, delivered for a turn's waiting call: found on the turn's record (its
 * pending list, on whichever instance runs it), then given to the waiting call as the answer of
 * its pending request, so the same broker rules apply (owner only, first answer wins, late
 * answers hear why).
 */
import type { Principal } from '../auth/principal.js'
import { principalKey } from '../auth/principal.js'
import { TollgateError } from '../core/errors.js'
import type { TurnService } from './turn-service.js'

export interface DeliveredResult {
  turn_id: string
  call_id: string
  request_id: string
}

export async function deliverToolResult (
  turns: TurnService, principal: Principal, turnId: string, result: { call_id: string, output: string }, channel: string
): Promise<DeliveredResult> {
  const turn = await turns.get(principal, turnId)
  if (turn.status !== 'running') throw new TollgateError('TURN_NOT_RUNNING')
  const waiting = turn.pending_approvals.find((p) => p.call_id === result.call_id && p.client_tool === true)
  if (waiting === undefined) throw new TollgateError('TOOL_CALL_NOT_WAITING')
  await turns.answerApproval(principal, waiting.request_id, {
    decision: 'edit',
    replacement: result.output,
    decidedBy: `${channel}:${principalKey(principal)}`,
    channel
  })
  return { turn_id: turn.turn_id, call_id: result.call_id, request_id: waiting.request_id }
}
