/**
 * `notifications` as the parts that deliver them, checked at start: a webhook whose secret is
 * unset or too short, or that escalates to a webhook that does not exist, stops the start.
 */
import { Agent } from 'undici'
import { ConfigError, type Config } from '../core/config.js'
import type { BusEnvelope } from '../core/envelope.js'
import { webhookSecretKey } from '../core/security/webhook-signature.js'
import type { OutboxPlanner } from '../store/outbox.js'
import { createDestinationGuard } from '../tools/builtin/net-guard.js'
import { planEvent, type PlanContext, type PlannedWebhook } from './plan.js'
import type { SendContext, SendTarget } from './send.js'

/** Standard Webhooks asks for 24 to 64 random bytes. */
const MIN_SECRET_BYTES = 24

export interface NotificationSetup {
  plan: PlanContext
  /** null without webhooks: the store then plans nothing at all. */
  planner: OutboxPlanner | null
  targets: Map<string, SendTarget>
}

export function resolveNotifications (config: Config, env: NodeJS.ProcessEnv): NotificationSetup {
  const { webhooks } = config.notifications
  // Deliveries are written with the events they announce: without an event log there is no such write.
  if (webhooks.length > 0 && (config.store.kind === 'memory' || !config.store.event_log)) {
    throw new ConfigError('notifications.webhooks need a store that keeps the event log: store.kind "sqlite" or "postgres" with store.event_log = true')
  }
  const ids = new Set<string>()
  const targets = new Map<string, SendTarget>()
  const planned: PlannedWebhook[] = []
  for (const [i, w] of webhooks.entries()) {
    const where = `notifications.webhooks[${i}]`
    if (ids.has(w.id)) throw new ConfigError(`${where}: the id ${w.id} is used twice`)
    ids.add(w.id)
    const secret = env[w.secret_env]
    if (secret === undefined || secret === '') throw new ConfigError(`${where}.secret_env names ${w.secret_env}, which is not set`)
    if (webhookSecretKey(secret).length < MIN_SECRET_BYTES) {
      throw new ConfigError(`${where}: the secret in ${w.secret_env} must be whsec_ and base64 of at least ${MIN_SECRET_BYTES} bytes`)
    }
    if ((w.escalate_to === undefined) !== (w.escalate_after_ms === undefined)) {
      throw new ConfigError(`${where}: escalate_to and escalate_after_ms go together`)
    }
    targets.set(w.id, { url: new URL(w.url), secret })
    planned.push({
      id: w.id,
      events: new Set(w.events),
      tenants: w.tenants === undefined ? null : new Set(w.tenants),
      escalation: w.escalate_to === undefined || w.escalate_after_ms === undefined
        ? null
        : { to: w.escalate_to, afterMs: w.escalate_after_ms }
    })
  }
  for (const [i, w] of webhooks.entries()) {
    if (w.escalate_to !== undefined && !ids.has(w.escalate_to)) {
      throw new ConfigError(`notifications.webhooks[${i}].escalate_to names ${w.escalate_to}, which is not a webhook`)
    }
  }
  const publicUrl = config.server.public_url === undefined ? null : config.server.public_url.replace(/\/+$/, '')
  const plan: PlanContext = { webhooks: planned, retryForMs: config.notifications.retry_for_ms, publicUrl }
  return { plan, planner: planned.length === 0 ? null : (e: BusEnvelope) => planEvent(plan, e), targets }
}

/** How the dispatcher reaches webhooks: through the SSRF guard unless private targets are allowed. */
export function sendContext (config: Config): SendContext {
  const guard = createDestinationGuard({ allowHosts: [], allowPrivate: config.notifications.allow_private_targets })
  const timeoutMs = config.notifications.timeout_ms
  return { guard, dispatcher: new Agent({ connect: { lookup: guard.lookup, timeout: timeoutMs } }), timeoutMs }
}
