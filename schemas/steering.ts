/**
 * Steering: a message added to a running turn (`POST /v1/turns/{turn_id}/messages`, WS `turn.steer`).
 * It joins the model's history before the turn's next model call.
 */
import { Type, type Static } from '@sinclair/typebox'
import { OpaqueId } from './common.js'
import { MAX_MESSAGE_CHARS } from './turn.js'

export const SteerRequest = Type.Object({
  message: Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS })
}, { additionalProperties: false, title: 'SteerRequest' })
export type SteerRequest = Static<typeof SteerRequest>

export const SteerAccepted = Type.Object({
  turn_id: OpaqueId,
  seq: Type.Integer({ minimum: 1, description: 'The seq of the `user.message` event that records the message' }),
  n: Type.Integer({ minimum: 1, description: 'Its place among the turn\'s steering messages, from 1' }),
  queued: Type.Integer({ minimum: 1, description: 'Messages waiting for the turn\'s next model call, this one included' })
}, { title: 'SteerAccepted' })
export type SteerAccepted = Static<typeof SteerAccepted>
