/**
 * The webhook delivery log of the caller's tenant: its deliveries (the dead letters with
 * `?status=failed`), and the retry of a failed one. Deliveries of other tenants are not found.
 */
import type { FastifyInstance } from 'fastify'
import { Problem } from '../schemas/common.js'
import { DeliveriesPage, DeliveriesQuery, DeliveryParams, WebhookDelivery } from '../schemas/notifications.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { deliveryView, retryDelivery } from '../src/notify/delivery-log.js'

export default async function webhookRoutes (app: FastifyInstance): Promise<void> {
  const { store, auth, config } = app.gateway
  app.get('/v1/webhooks/deliveries', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'List your tenant\'s webhook deliveries',
      description: 'Newest first. `status=failed` lists the dead letters: deliveries given up after `notifications.retry_for_ms`, ' +
        'or refused (a private target without `notifications.allow_private_targets`).',
      querystring: DeliveriesQuery,
      response: { 200: DeliveriesPage, 400: Problem, 401: Problem, 403: Problem }
    }
  }, async (request) => {
    const q = request.query as DeliveriesQuery
    const tenant = principalOf(request).tenant
    const records = await store.outbox.list({ tenant, ...(q.status === undefined ? {} : { status: q.status }) }, q.limit ?? 50)
    return { items: records.map(deliveryView) }
  })

  app.post('/v1/webhooks/deliveries/:delivery_id/retry', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: {
      summary: 'Try a failed webhook delivery again',
      description: 'The delivery becomes pending, due now, with its webhook-id and body unchanged, and is tried for another ' +
        '`notifications.retry_for_ms`. 404 DELIVERY_NOT_FOUND for an unknown id and another tenant\'s alike; 409 ' +
        'DELIVERY_NOT_FAILED unless it is failed.',
      params: DeliveryParams,
      response: { 200: WebhookDelivery, 400: Problem, 401: Problem, 403: Problem, 404: Problem, 409: Problem }
    }
  }, async (request) => {
    const { delivery_id: id } = request.params as { delivery_id: string }
    return await retryDelivery(store.outbox, principalOf(request).tenant, id, config.notifications.retry_for_ms)
  })
}
