/**
 * Receipt verification for a client: only the owner of a turn may ask, on any instance that holds
 * the master key the turn was signed under. Nothing here says the call was approved or persisted.
 */
import type { ReceiptVerifyRequest, ReceiptVerifyResult } from '../../schemas/receipts.js'
import type { Principal } from '../auth/principal.js'
import type { ReceiptKey } from './keys.js'

/** What verification needs of the turn service: the caller's turn and the key it was signed under. */
export interface ReceiptTurns<T> {
  get (principal: Principal, turnId: string): Promise<T>
  receiptKeyOf (turn: T): ReceiptKey | null
}

export async function verifyToolReceipt<T> (
  turns: ReceiptTurns<T>, principal: Principal, request: ReceiptVerifyRequest
): Promise<ReceiptVerifyResult> {
  // Ownership first: another principal's turn answers TURN_NOT_FOUND, like a missing one.
  const turn = await turns.get(principal, request.turn_id)
  const key = turns.receiptKeyOf(turn)
  if (key === null) return { valid: false, reason: 'key_unavailable' }
  return key.check(request.receipt, {
    turnId: request.turn_id,
    callId: request.call_id,
    tool: request.tool,
    arguments: request.arguments,
    output: request.output
  })
}
