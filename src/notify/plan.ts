/**
 * Planning: which notifications a stored event announces, and to which webhooks. Pure and
 * synchronous — the store runs it inside the transaction that writes the event (decision 0263) —
 * and deterministic: ids and times come from the event, so a repeated write plans the same rows.
 */
import { createHash } from 'node:crypto'
import type { BusEnvelope } from '../core/envelope.js'
import { scrubValue } from '../core/security/redact.js'
import { NOTHING, type OutboxDelivery, type OutboxWrite } from '../store/outbox.js'
import type { NotificationType } from '../../schemas/config.js'

/** A webhook as the planner needs it (the secret stays with the sender). */
export interface PlannedWebhook {
  id: string
  events: ReadonlySet<string>
  /** null: every tenant. */
  tenants: ReadonlySet<string> | null
  escalation: { to: string, afterMs: number } | null
}

export interface PlanContext {
  webhooks: readonly PlannedWebhook[]
  /** How long after it is written a message is still tried. */
  retryForMs: number
  /** server.public_url without its trailing slash: approval messages then carry the URL that answers them. */
  publicUrl: string | null
}

/** One message before it is addressed: what it is, whose, and its content. */
export interface Message {
  id: string
  type: NotificationType
  tenant: string
  atMs: number
  data: Record<string, unknown>
  turnId: string | null
  /** The approval request an approval.requested message asks about (its escalation waits on it). */
  requestId: string | null
}

function digest (text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32)
}

/** The body every attempt POSTs: `{type, timestamp, data}`, data scrubbed of credentials. */
export function messageBody (message: Message): string {
  return JSON.stringify({ type: message.type, timestamp: new Date(message.atMs).toISOString(), data: scrubValue(message.data) })
}

function wants (webhook: PlannedWebhook, message: Message): boolean {
  return webhook.events.has(message.type) && (webhook.tenants === null || webhook.tenants.has(message.tenant))
}

/** The deliveries of `message`: one per webhook that takes it, and an escalation where a webhook asks for one. */
export function address (ctx: PlanContext, message: Message): OutboxDelivery[] {
  const deliveries: OutboxDelivery[] = []
  const body = messageBody(message)
  const base = { tenant: message.tenant, type: message.type, created_ms: message.atMs, turn_id: message.turnId }
  for (const webhook of ctx.webhooks) {
    if (!wants(webhook, message)) continue
    deliveries.push({
      ...base,
      id: `dlv_${digest(`${message.id}/${webhook.id}`)}`,
      message_id: message.id,
      webhook: webhook.id,
      body,
      due_ms: message.atMs,
      give_up_ms: message.atMs + ctx.retryForMs,
      escalation_of: null
    })
    if (webhook.escalation === null || message.type !== 'approval.requested' || message.requestId === null) continue
    // Another message (its own webhook-id) to the second route, due once the wait has run; the
    // answer, the expiry or the turn's end cancels it in the transaction that records them.
    const dueMs = message.atMs + webhook.escalation.afterMs
    const escalated: Message = {
      ...message,
      id: `msg_${digest(`${message.id}/escalated/${webhook.id}`)}`,
      data: { ...message.data, escalated: { from: webhook.id, after_ms: webhook.escalation.afterMs } }
    }
    deliveries.push({
      ...base,
      id: `dlv_${digest(`${escalated.id}/${webhook.escalation.to}`)}`,
      message_id: escalated.id,
      webhook: webhook.escalation.to,
      body: messageBody(escalated),
      due_ms: dueMs,
      give_up_ms: dueMs + ctx.retryForMs,
      escalation_of: message.requestId
    })
  }
  return deliveries
}

function answerUrl (ctx: PlanContext, requestId: string): Record<string, string> {
  return ctx.publicUrl === null ? {} : { answer_url: `${ctx.publicUrl}/v1/approvals/${encodeURIComponent(requestId)}` }
}

/** The messages an event announces (most announce none). */
export function messagesOf (ctx: PlanContext, e: BusEnvelope): Message[] {
  const event = e.event
  const atMs = Date.parse(e.ts)
  const about = { turn_id: e.turn_id, session_id: e.session_id }
  const message = (type: NotificationType, data: Record<string, unknown>, requestId: string | null = null): Message => ({
    id: `msg_${digest(`${e.turn_id}/${e.seq}/${type}`)}`, type, tenant: e.tenant, atMs, data: { ...about, ...data }, turnId: e.turn_id, requestId
  })
  switch (event.kind) {
    case 'approval.requested': {
      const requested = message('approval.requested', {
        request_id: event.request_id,
        call_id: event.call_id,
        tool: event.name,
        summary: event.summary,
        display: event.display,
        why: event.reason,
        risk: event.risk,
        requested_at: event.requested_at,
        expires_at: event.expires_at,
        ...(event.approval_kind === undefined ? {} : { approval_kind: event.approval_kind }),
        ...(event.client_tool === undefined ? {} : { client_tool: true }),
        answer: { method: 'POST', path: `/v1/approvals/${encodeURIComponent(event.request_id)}` },
        ...answerUrl(ctx, event.request_id)
      }, event.request_id)
      if (event.approval_kind !== 'budget') return [requested]
      // The budget gate asks before it fails the turn: the overrun is in the request's arguments.
      return [requested, message('budget.exceeded', { outcome: 'asking', request_id: event.request_id, ...event.arguments })]
    }
    case 'approval.resolved':
      if (event.decision === 'expired') return [message('approval.expired', { request_id: event.request_id, call_id: event.call_id })]
      return [message('approval.resolved', {
        request_id: event.request_id, call_id: event.call_id, decision: event.decision, decided_by: event.decided_by
      })]
    case 'turn.completed':
      return [message('turn.completed', { final_text: event.final_text, ...(event.usage === undefined ? {} : { usage: event.usage }) })]
    case 'turn.failed': {
      const failed = message('turn.failed', {
        code: event.code, message: event.message, ...(event.usage === undefined ? {} : { usage: event.usage })
      })
      if (event.code !== 'BUDGET_EXCEEDED') return [failed]
      return [failed, message('budget.exceeded', { outcome: 'turn_failed', message: event.message })]
    }
    default:
      return []
  }
}

/** What a stored event adds to the outbox: the planner the store is created with. */
export function planEvent (ctx: PlanContext, e: BusEnvelope): OutboxWrite {
  const kind = e.event.kind
  // Only escalations are ever cancelled: without any, a finished turn writes nothing more.
  const escalates = ctx.webhooks.some((w) => w.escalation !== null)
  const finished = escalates && (kind === 'turn.completed' || kind === 'turn.failed' || kind === 'turn.cancelled')
  const answered = escalates && e.event.kind === 'approval.resolved' ? [e.event.request_id] : []
  const deliveries = messagesOf(ctx, e).flatMap((m) => address(ctx, m))
  if (deliveries.length === 0 && !finished && answered.length === 0) return NOTHING
  return { deliveries, cancelEscalationsOf: answered, cancelEscalationsOfTurns: finished ? [e.turn_id] : [] }
}
