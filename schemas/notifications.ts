import { Type, type Static } from '@sinclair/typebox'
import { OpaqueId } from './common.js'

export const DeliveryStatus = Type.Union([
  Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed'), Type.Literal('cancelled')
], { description: 'pending: waiting for its next attempt; delivered: a 2xx answer; failed: given up (a dead letter); cancelled: an escalation no longer needed' })

/** One message to one webhook, as the delivery log lists it. */
export const WebhookDelivery = Type.Object({
  id: OpaqueId,
  message_id: Type.String({ description: 'The webhook-id header: the same on every attempt' }),
  webhook: Type.String({ description: 'notifications.webhooks[].id' }),
  type: Type.String({ description: 'The message type (approval.requested, turn.completed, ...)' }),
  status: DeliveryStatus,
  attempts: Type.Integer({ minimum: 0 }),
  created_at: Type.String({ format: 'date-time' }),
  next_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When a pending delivery is tried next; null otherwise' }),
  give_up_at: Type.String({ format: 'date-time', description: 'A pending delivery still failing then is given up' }),
  last_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  last_status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'The webhook\'s HTTP status at the last attempt; null if none came' }),
  last_error: Type.Union([Type.String(), Type.Null()]),
  escalation_of: Type.Union([Type.String(), Type.Null()], { description: 'For an escalation: the approval request it escalates' }),
  payload: Type.Unknown({ description: 'The body POSTed: {type, timestamp, data}' })
}, { title: 'WebhookDelivery' })
export type WebhookDelivery = Static<typeof WebhookDelivery>

export const DeliveriesQuery = Type.Object({
  status: Type.Optional(DeliveryStatus),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 }))
}, { additionalProperties: false })
export type DeliveriesQuery = Static<typeof DeliveriesQuery>

export const DeliveriesPage = Type.Object({
  items: Type.Array(WebhookDelivery, { description: 'Newest first' })
}, { title: 'WebhookDeliveriesPage' })

export const DeliveryParams = Type.Object({ delivery_id: OpaqueId }, { additionalProperties: false })
