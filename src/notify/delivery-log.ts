/**
 * The delivery log as the API shows it, and the retry of a dead letter: a failed delivery goes
 * back to pending with its webhook-id and body unchanged, tried again for another `retry_for_ms`.
 */
import { TollgateError } from '../core/errors.js'
import type { DeliveryRecord, Outbox } from '../store/outbox.js'
import type { WebhookDelivery } from '../../schemas/notifications.js'

function iso (ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString()
}

export function deliveryView (r: DeliveryRecord): WebhookDelivery {
  return {
    id: r.id,
    message_id: r.message_id,
    webhook: r.webhook,
    type: r.type,
    status: r.status,
    attempts: r.attempts,
    created_at: new Date(r.created_ms).toISOString(),
    next_attempt_at: r.status === 'pending' ? iso(r.due_ms) : null,
    give_up_at: new Date(r.give_up_ms).toISOString(),
    last_attempt_at: iso(r.last_attempt_ms),
    last_status_code: r.last_status_code,
    last_error: r.last_error,
    escalation_of: r.escalation_of,
    payload: JSON.parse(r.body) as unknown
  }
}

/** Makes the tenant's failed delivery pending again; DELIVERY_NOT_FOUND / DELIVERY_NOT_FAILED otherwise. */
export async function retryDelivery (outbox: Outbox, tenant: string, id: string, retryForMs: number): Promise<WebhookDelivery> {
  const now = Date.now()
  if (!await outbox.retry(tenant, id, now, now + retryForMs)) {
    const found = await outbox.get(tenant, id)
    throw new TollgateError(found === null ? 'DELIVERY_NOT_FOUND' : 'DELIVERY_NOT_FAILED')
  }
  const record = await outbox.get(tenant, id)
  if (record === null) throw new TollgateError('DELIVERY_NOT_FOUND')
  return deliveryView(record)
}
