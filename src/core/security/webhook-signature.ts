/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the one place that signs what the
 * gateway POSTs to someone else's server — HTTP tools and notifications alike — so a receiver can
 * verify both with the same `standardwebhooks` library and the same secret format.
 *
 * The signed content is `${id}.${timestamp}.${body}`; the key is the secret's base64 payload after the
 * `whsec_` prefix; the signature header is `v1,<base64 HMAC-SHA256>`.
 */
import { createHmac, randomUUID } from 'node:crypto'

export interface WebhookHeaders {
  'webhook-id': string
  'webhook-timestamp': string
  'webhook-signature': string
}

export interface SignInput {
  /** Stable per message: retries of one message carry the same id so receivers can deduplicate. */
  id: string
  /** Seconds since the epoch, as the receiver checks it against its clock. */
  timestampSeconds: number
  body: string
  /** `whsec_<base64>`; a secret without the prefix is taken as base64 as well. */
  secret: string
}

export function webhookSecretKey (secret: string): Buffer {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret
  return Buffer.from(encoded, 'base64')
}

export function signWebhook (input: SignInput): WebhookHeaders {
  const timestamp = String(Math.floor(input.timestampSeconds))
  const mac = createHmac('sha256', webhookSecretKey(input.secret))
    .update(`${input.id}.${timestamp}.${input.body}`)
    .digest('base64')
  return { 'webhook-id': input.id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${mac}` }
}

export function newWebhookMessageId (): string {
  return `msg_${randomUUID().replaceAll('-', '')}`
}
