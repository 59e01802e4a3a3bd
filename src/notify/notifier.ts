/**
 * Announcing what no turn event carries — a scheduled run that failed, say — for the components
 * the gateway hands it to: the message is addressed like an event's and written to the outbox,
 * from where the dispatcher delivers it.
 */
import { newWebhookMessageId } from '../core/security/webhook-signature.js'
import type { Outbox } from '../store/outbox.js'
import type { NotificationType } from '../../schemas/config.js'
import { address, type PlanContext } from './plan.js'

export interface Notifier {
  /** Resolves once the message is in the outbox (not once it is delivered). */
  announce (type: NotificationType, tenant: string, data: Record<string, unknown>): Promise<void>
}

export const SILENT_NOTIFIER: Notifier = { async announce () {} }

export function outboxNotifier (ctx: PlanContext, outbox: Outbox): Notifier {
  return {
    async announce (type, tenant, data) {
      const message = { id: newWebhookMessageId(), type, tenant, atMs: Date.now(), data, turnId: null, requestId: null }
      const deliveries = address(ctx, message)
      if (deliveries.length === 0) return
      await outbox.add({ deliveries, cancelEscalationsOf: [], cancelEscalationsOfTurns: [] })
    }
  }
}
