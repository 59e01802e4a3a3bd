/**
 * One attempt of one delivery: the stored body POSTed to the webhook, signed as a Standard Webhook
 * (the message's id on every attempt, a fresh timestamp), through the SSRF guard the HTTP tools
 * use, bounded in time. The answer's body is read and dropped: only its status counts.
 */
import net from 'node:net'
import { request, type Dispatcher } from 'undici'
import { signWebhook } from '../core/security/webhook-signature.js'
import { DestinationNotAllowedError, type DestinationGuard } from '../tools/builtin/net-guard.js'

export interface SendTarget {
  url: URL
  /** whsec_<base64>. */
  secret: string
}

export interface SendContext {
  guard: DestinationGuard
  /** Connects through `guard.lookup`: a name is checked on every connection, not once. */
  dispatcher: Dispatcher
  timeoutMs: number
}

export type SendResult =
  | { ok: true, statusCode: number }
  /** `final`: trying again cannot help (a refused destination). */
  | { ok: false, statusCode: number | null, error: string, final: boolean }

const MAX_ERROR_CHARS = 500

function refusal (err: unknown): DestinationNotAllowedError | null {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof DestinationNotAllowedError) return e
  }
  return null
}

export async function sendDelivery (
  ctx: SendContext, target: SendTarget, message: { id: string, body: string }, signal: AbortSignal
): Promise<SendResult> {
  const host = target.url.hostname.replace(/^\[|\]$/g, '')
  // Names are checked in the socket's lookup; a literal IP never reaches one.
  if (net.isIP(host) !== 0 && !ctx.guard.permits(host, host)) {
    return { ok: false, statusCode: null, error: `DESTINATION_NOT_ALLOWED: ${new DestinationNotAllowedError(host).message}`, final: true }
  }
  const headers = signWebhook({ id: message.id, timestampSeconds: Date.now() / 1000, body: message.body, secret: target.secret })
  try {
    const res = await request(target.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'tollgate-webhooks', ...headers },
      body: message.body,
      dispatcher: ctx.dispatcher,
      signal: AbortSignal.any([signal, AbortSignal.timeout(ctx.timeoutMs)]),
      headersTimeout: ctx.timeoutMs,
      bodyTimeout: ctx.timeoutMs
    })
    await res.body.dump()
    if (res.statusCode >= 200 && res.statusCode < 300) return { ok: true, statusCode: res.statusCode }
    return { ok: false, statusCode: res.statusCode, error: `the webhook answered HTTP ${res.statusCode}`, final: false }
  } catch (err) {
    const refused = refusal(err)
    if (refused !== null) return { ok: false, statusCode: null, error: `DESTINATION_NOT_ALLOWED: ${refused.message}`, final: true }
    const text = err instanceof Error ? err.message : String(err)
    return { ok: false, statusCode: null, error: `the webhook could not be reached: ${text}`.slice(0, MAX_ERROR_CHARS), final: false }
  }
}
