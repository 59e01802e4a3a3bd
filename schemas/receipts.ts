import { Type, type Static } from '@sinclair/typebox'
import { OpaqueId, ToolName } from './common.js'

/** Longer than any receipt this gateway mints (67 characters), so a bad one is answered, not refused. */
export const MAX_RECEIPT_CHARS = 256

/**
 * What a receipt was made over: the call as it ran (tool name as the model requested it, the
 * prepared arguments) and the full normalised output, before bounding and scrubbing.
 */
export const ReceiptVerifyRequest = Type.Object({
  receipt: Type.String({ maxLength: MAX_RECEIPT_CHARS, description: 'tg-receipt-<unix seconds>-<base64url MAC>' }),
  turn_id: OpaqueId,
  call_id: OpaqueId,
  tool: ToolName,
  arguments: Type.Record(Type.String(), Type.Unknown(), { description: 'The arguments the tool ran with' }),
  output: Type.String({ description: 'The full tool output; a truncated or scrubbed copy does not verify' })
}, { additionalProperties: false, title: 'ReceiptVerifyRequest' })
export type ReceiptVerifyRequest = Static<typeof ReceiptVerifyRequest>

export const ReceiptInvalidReason = Type.Union([
  Type.Literal('key_unavailable'),
  Type.Literal('malformed'),
  Type.Literal('mismatch')
], {
  description: 'key_unavailable: the master key the turn was signed under is not configured here (retired, or a per-process key of ' +
    'another process); malformed: not a receipt; mismatch: not made for this call and output by this key'
})

export const ReceiptVerifyResult = Type.Object({
  valid: Type.Boolean(),
  reason: Type.Optional(ReceiptInvalidReason)
}, { title: 'ReceiptVerifyResult' })
export type ReceiptVerifyResult = Static<typeof ReceiptVerifyResult>
