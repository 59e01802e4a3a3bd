/**
 * The delivery loop of one instance: every `pollMs` it claims the deliveries that are due (under a
 * lease, so no other instance tries them meanwhile), tries each once, and records the outcome —
 * delivered, due again after a backoff, or given up (a dead letter). Delivery is at least once:
 * an instance that dies between a receiver's 2xx and the record of it leaves the delivery to be
 * tried again once its lease runs out, with the same webhook-id.
 */
import type { Logger } from 'pino'
import type { AttemptOutcome, DeliveryRecord, Outbox } from '../store/outbox.js'
import { nextAttemptMs, type RetryPolicy } from './retry-policy.js'
import { sendDelivery, type SendContext, type SendTarget } from './send.js'

export interface DispatcherOptions {
  outbox: Outbox
  instanceId: string
  /** Configured webhooks by id. */
  targets: ReadonlyMap<string, SendTarget>
  send: SendContext
  retry: RetryPolicy
  pollMs: number
  leaseMs: number
  /** Deliveries tried at once per poll. */
  batch: number
  /** True when no other process uses the store (SQLite): every lease found at start is a dead process's. */
  exclusive: boolean
  log: Logger
}

export class WebhookDispatcher {
  private readonly options: DispatcherOptions
  private readonly stopping = new AbortController()
  private timer: NodeJS.Timeout | null = null
  private round: Promise<void> | null = null

  constructor (options: DispatcherOptions) {
    this.options = options
  }

  start (): void {
    if (!this.options.exclusive) {
      this.schedule()
      return
    }
    this.round = this.options.outbox.releaseLeases()
      .catch((err: unknown) => { this.options.log.warn({ err }, 'could not release the webhook deliveries of a previous process') })
      .finally(() => {
        this.round = null
        this.schedule()
      })
  }

  private schedule (): void {
    if (this.stopping.signal.aborted) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.round = this.poll().finally(() => {
        this.round = null
        this.schedule()
      })
    }, this.options.pollMs)
  }

  private async poll (): Promise<void> {
    const { outbox, instanceId, leaseMs, batch, log } = this.options
    let claimed: DeliveryRecord[]
    try {
      claimed = await outbox.claim(instanceId, Date.now(), leaseMs, batch)
    } catch (err) {
      log.warn({ err }, 'could not claim webhook deliveries; trying again')
      return
    }
    await Promise.all(claimed.map(async (d) => { await this.deliver(d) }))
  }

  private async deliver (d: DeliveryRecord): Promise<void> {
    const { outbox, instanceId, log } = this.options
    const outcome = await this.attempt(d)
    if (!outcome.ok) {
      log[outcome.retryAtMs === null ? 'error' : 'warn']({ delivery: d.id, webhook: d.webhook, type: d.type, error: outcome.error },
        outcome.retryAtMs === null ? 'a webhook delivery failed for good' : 'a webhook delivery failed; it will be tried again')
    }
    try {
      await outbox.settle(d.id, instanceId, outcome)
    } catch (err) {
      // The lease runs out and the delivery is tried again: at least once, never lost.
      log.warn({ err, delivery: d.id }, 'could not record a webhook delivery attempt')
    }
  }

  private async attempt (d: DeliveryRecord): Promise<AttemptOutcome> {
    const target = this.options.targets.get(d.webhook)
    if (target === undefined) {
      return { ok: false, statusCode: null, error: `the webhook ${d.webhook} is not configured`, atMs: Date.now(), retryAtMs: null }
    }
    const result = await sendDelivery(this.options.send, target, { id: d.message_id, body: d.body }, this.stopping.signal)
    const atMs = Date.now()
    if (result.ok) return { ok: true, statusCode: result.statusCode, atMs }
    const retryAtMs = result.final ? null : nextAttemptMs(this.options.retry, d.attempts + 1, atMs, d.give_up_ms)
    return { ok: false, statusCode: result.statusCode, error: result.error, atMs, retryAtMs }
  }

  /** Stops polling and lets the round under way finish (its attempts are bounded by the timeout). */
  async close (): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    const round = this.round
    this.stopping.abort()
    await round
  }
}
