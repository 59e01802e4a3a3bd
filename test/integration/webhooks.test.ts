/**
 * Notifications as Standard Webhooks, against a real gateway and a receiver on loopback that
 * verifies every message with the `standardwebhooks` library: what is announced, signed how,
 * retried with the same webhook-id, given up into the dead letters and retried from there,
 * escalated, and refused when the target is private.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { startFakeProvider } from '../helpers/fake-provider.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'
import { finishedTurn, runTurn, startTurn } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'
import { startWebhookReceiver, type ReceivedMessage, type WebhookReceiver } from '../helpers/webhook-receiver.js'

const ALL = ['approval.requested', 'approval.resolved', 'approval.expired', 'turn.completed', 'turn.failed', 'budget.exceeded', 'schedule.run_failed']
const PUBLIC_URL = 'http://localhost:8080'

interface Setup {
  g: TestGateway
  receiver: WebhookReceiver
}

/** A scratch SQLite store: deliveries are written with the events they announce, so the store must keep them. */
async function sqliteStore (t: TestContext): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-webhooks-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  return { kind: 'sqlite', sqlite: { path: join(dir, 'tollgate.db') } }
}

/** A gateway with one webhook `main` (every type) at a fresh receiver; fast polling and backoff. */
async function withWebhook (
  t: TestContext, notifications: Record<string, unknown> = {}, extra: Record<string, unknown> = {}
): Promise<Setup> {
  const receiver = await startWebhookReceiver()
  t.after(async () => { await receiver.close() })
  const probes = createProbes()
  const g = await startGateway({
    tools: probes.tools,
    env: { MAIN_SECRET: receiver.secret },
    overrides: probeOverrides({
      server: { public_url: PUBLIC_URL },
      store: await sqliteStore(t),
      notifications: {
        webhooks: [{ id: 'main', url: receiver.url, secret_env: 'MAIN_SECRET', events: ALL }],
        allow_private_targets: true,
        poll_ms: 20,
        initial_backoff_ms: 50,
        max_backoff_ms: 200,
        ...notifications
      },
      ...extra
    })
  })
  t.after(async () => { await g.close() })
  return { g, receiver }
}

async function arrival (receiver: WebhookReceiver, type: string, what = type, timeoutMs = 10_000): Promise<ReceivedMessage> {
  let found: ReceivedMessage | undefined
  await eventually(() => {
    found = receiver.received.find((m) => m.type === type && m.status < 300)
    return found !== undefined
  }, { what: `a delivered ${what}`, timeoutMs })
  return found as ReceivedMessage
}

test('a detached approval is announced, signed, within 3 s; a 500 first gets a retry with the same webhook-id; the REST answer is announced', async (t) => {
  const { g, receiver } = await withWebhook(t)
  receiver.respond = (m) => (m.type === 'approval.requested' && m.arrival === 1 ? 500 : 204)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'x' } }] }, { text: 'done' })
  const started = await startTurn(g, { message: 'go', detach: true })
  const t0 = Date.now()
  await eventually(() => receiver.ofType('approval.requested').length > 0, { what: 'the first approval.requested', timeoutMs: 3000 })
  assert.ok(Date.now() - t0 < 3000)
  const requested = await arrival(receiver, 'approval.requested')
  const attempts = receiver.ofType('approval.requested')
  assert.deepEqual(attempts.map((m) => [m.arrival, m.status]), [[1, 500], [2, 204]])
  assert.equal(attempts[0]?.webhookId, attempts[1]?.webhookId)
  assert.equal(receiver.rejected, 0)

  const data = requested.payload.data
  const pending = (await g.http('GET', '/v1/approvals?status=pending')).body.items[0]
  assert.deepEqual(Object.keys(requested.payload).sort(), ['data', 'timestamp', 'type'])
  assert.deepEqual(
    [data.turn_id, data.session_id, data.request_id, data.tool, data.display, data.why, data.expires_at, data.risk],
    [started.turn_id, started.session_id, pending.request_id, 'risky', [{ name: 'label', value: 'x' }], pending.reason, pending.expires_at, 'medium']
  )
  assert.deepEqual(data.answer, { method: 'POST', path: `/v1/approvals/${pending.request_id}` })
  assert.equal(data.answer_url, `${PUBLIC_URL}/v1/approvals/${pending.request_id}`)

  const answer = await g.http('POST', `/v1/approvals/${pending.request_id}`, { decision: 'yes' })
  assert.equal(answer.status, 200)
  const resolved = await arrival(receiver, 'approval.resolved')
  assert.deepEqual(
    [resolved.payload.data.request_id, resolved.payload.data.decision, resolved.payload.data.decided_by],
    [pending.request_id, 'yes', 'rest:local/local']
  )
  const completed = await arrival(receiver, 'turn.completed')
  assert.deepEqual([completed.payload.data.turn_id, completed.payload.data.final_text], [started.turn_id, 'done'])
  assert.notEqual(completed.webhookId, resolved.webhookId)

  const log = (await g.http('GET', '/v1/webhooks/deliveries')).body.items
  const first = log.find((d: any) => d.type === 'approval.requested')
  assert.deepEqual([first.status, first.attempts, first.last_status_code, first.message_id], ['delivered', 2, 204, requested.webhookId])
})

test('a failed turn is announced as turn.failed with its code', async (t) => {
  const { g, receiver } = await withWebhook(t)
  g.provider.enqueue({ status: 400, errorBody: '{"error":{"message":"bad request"}}' })
  const { turn } = await runTurn(g, { message: 'fail please' })
  assert.equal(turn.status, 'failed')
  const failed = await arrival(receiver, 'turn.failed')
  assert.deepEqual([failed.payload.data.turn_id, failed.payload.data.code], [turn.turn_id, 'PROVIDER_ERROR'])
  assert.equal(receiver.ofType('turn.completed').length, 0)
})

test('a turn stopped by its budget is announced as budget.exceeded and turn.failed', async (t) => {
  const { g, receiver } = await withWebhook(t, {}, {
    providers: { fake: { pricing: { input_usd_per_mtok: 0, output_usd_per_mtok: 2000 }, max_tokens: 5 } },
    budgets: { turn_usd: 0.015 }
  })
  g.provider.enqueue(...Array.from({ length: 5 }, (_, i) => ({
    toolCalls: [{ id: `c${i}`, name: 'probe', arguments: { label: `p${i}` } }], usage: { prompt_tokens: 10, completion_tokens: 5 }
  })))
  const { turn } = await runTurn(g, { message: 'spend' })
  assert.equal(turn.status, 'failed')
  const exceeded = await arrival(receiver, 'budget.exceeded')
  assert.equal(exceeded.payload.data.turn_id, turn.turn_id)
  assert.equal(exceeded.payload.data.outcome, 'turn_failed')
  assert.match(exceeded.payload.data.message, /budget turn_usd exceeded/)
  const failed = await arrival(receiver, 'turn.failed')
  assert.equal(failed.payload.data.code, 'BUDGET_EXCEEDED')
})

test('a delivery that keeps failing is given up, listed as failed, and POST .../retry delivers it with the same webhook-id', async (t) => {
  const { g, receiver } = await withWebhook(t, { retry_for_ms: 1000 })
  receiver.respond = () => 503
  g.provider.enqueue({ text: 'hello' })
  const { turn } = await runTurn(g, { message: 'hi' })
  let dead: any
  await eventually(async () => {
    dead = (await g.http('GET', '/v1/webhooks/deliveries?status=failed')).body.items.find((d: any) => d.type === 'turn.completed')
    return dead !== undefined
  }, { what: 'the turn.completed delivery given up', timeoutMs: 15_000 })
  assert.equal(dead.status, 'failed')
  assert.equal(dead.last_status_code, 503)
  assert.ok(dead.attempts >= 2, `attempts: ${dead.attempts}`)
  assert.equal(dead.payload.data.turn_id, turn.turn_id)
  const tried = receiver.ofType('turn.completed')
  assert.equal(new Set(tried.map((m) => m.webhookId)).size, 1)

  receiver.respond = () => 200
  const retried = await g.http('POST', `/v1/webhooks/deliveries/${dead.id}/retry`)
  assert.equal(retried.status, 200, JSON.stringify(retried.body))
  assert.equal(retried.body.status, 'pending')
  const delivered = await arrival(receiver, 'turn.completed')
  assert.equal(delivered.webhookId, tried[0]?.webhookId)
  await eventually(async () => (await g.http('GET', '/v1/webhooks/deliveries?status=delivered')).body.items.some((d: any) => d.id === dead.id),
    { what: 'the retried delivery recorded delivered' })
  const again = await g.http('POST', `/v1/webhooks/deliveries/${dead.id}/retry`)
  assert.deepEqual([again.status, again.body.code], [409, 'DELIVERY_NOT_FAILED'])
  const missing = await g.http('POST', '/v1/webhooks/deliveries/dlv_nothing/retry')
  assert.deepEqual([missing.status, missing.body.code], [404, 'DELIVERY_NOT_FOUND'])
})

test('a loopback target is refused without allow_private_targets: nothing is sent and the delivery is a dead letter', async (t) => {
  const { g, receiver } = await withWebhook(t, { allow_private_targets: false })
  g.provider.enqueue({ text: 'hello' })
  await runTurn(g, { message: 'hi' })
  let dead: any
  await eventually(async () => {
    dead = (await g.http('GET', '/v1/webhooks/deliveries?status=failed')).body.items[0]
    return dead !== undefined
  }, { what: 'the refused delivery listed as failed' })
  assert.deepEqual([dead.type, dead.attempts, dead.last_status_code], ['turn.completed', 1, null])
  assert.match(dead.last_error, /^DESTINATION_NOT_ALLOWED: destination address is not allowed: 127\.0\.0\.1/)
  assert.equal(receiver.received.length + receiver.rejected, 0)
})

test('an approval still unanswered after escalate_after_ms is announced to the escalation webhook; one answered before then is not', async (t) => {
  const ops = await startWebhookReceiver()
  t.after(async () => { await ops.close() })
  const receiver = await startWebhookReceiver()
  t.after(async () => { await receiver.close() })
  const probes = createProbes()
  const g = await startGateway({
    tools: probes.tools,
    env: { MAIN_SECRET: receiver.secret, OPS_SECRET: ops.secret },
    overrides: probeOverrides({
      store: await sqliteStore(t),
      notifications: {
        webhooks: [
          { id: 'main', url: receiver.url, secret_env: 'MAIN_SECRET', events: ['approval.requested'], escalate_to: 'ops', escalate_after_ms: 1000 },
          { id: 'ops', url: ops.url, secret_env: 'OPS_SECRET', events: ['turn.completed'] }
        ],
        allow_private_targets: true,
        poll_ms: 20
      }
    })
  })
  t.after(async () => { await g.close() })
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'first' } }] },
    { toolCalls: [{ id: 'c2', name: 'risky', arguments: { label: 'second' } }] },
    { text: 'done' }
  )
  const started = await startTurn(g, { message: 'go', detach: true })
  const first = await arrival(receiver, 'approval.requested')
  const escalated = await arrival(ops, 'approval.requested', 'escalation')
  assert.equal(escalated.payload.data.request_id, first.payload.data.request_id)
  assert.deepEqual(escalated.payload.data.escalated, { from: 'main', after_ms: 1000 })
  assert.notEqual(escalated.webhookId, first.webhookId)
  assert.ok(Number(escalated.timestamp) * 1000 >= Date.parse(first.payload.timestamp) + 1000 - 999, 'sent after escalate_after_ms')

  // The second request is answered at once: its escalation is cancelled in the answer's write.
  assert.equal((await g.http('POST', `/v1/approvals/${first.payload.data.request_id}`, { decision: 'yes' })).status, 200)
  let second: ReceivedMessage | undefined
  await eventually(() => {
    second = receiver.ofType('approval.requested').find((m) => m.payload.data.request_id !== first.payload.data.request_id)
    return second !== undefined
  }, { what: 'the second approval.requested' })
  assert.equal((await g.http('POST', `/v1/approvals/${second?.payload.data.request_id}`, { decision: 'yes' })).status, 200)
  await finishedTurn(g, started.turn_id)
  await arrival(ops, 'turn.completed')
  let cancelled: any
  await eventually(async () => {
    cancelled = (await g.http('GET', '/v1/webhooks/deliveries?status=cancelled')).body.items
    return cancelled.length === 1
  }, { what: 'the second escalation cancelled' })
  assert.deepEqual([cancelled[0].webhook, cancelled[0].escalation_of], ['ops', second?.payload.data.request_id])
  assert.equal(ops.ofType('approval.requested').length, 1)
})

test('a webhook that escalates to an unknown webhook stops the start, and so do webhooks on the memory store', async (t) => {
  const provider = await startFakeProvider()
  t.after(async () => { await provider.close() })
  const webhook = { id: 'a', url: 'https://example.test/', secret_env: 'S', events: ['turn.failed'] }
  const env = { S: 'whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=' }
  await assert.rejects(startGateway({
    provider,
    env,
    // Refused before the store is opened: this file is never made.
    overrides: { store: { kind: 'sqlite', sqlite: { path: join(tmpdir(), 'never', 'made.db') } }, notifications: { webhooks: [{ ...webhook, escalate_to: 'b', escalate_after_ms: 1000 }] } }
  }), /notifications\.webhooks\[0\]\.escalate_to names b, which is not a webhook/)
  await assert.rejects(startGateway({ provider, env, overrides: { notifications: { webhooks: [webhook] } } }),
    /notifications\.webhooks need a store that keeps the event log/)
})

test('a scheduled run whose turn fails is announced as schedule.run_failed, signed like every other message', async (t) => {
  const { g, receiver } = await withWebhook(t, {}, { schedules: { poll_ms: 100 } })
  g.provider.enqueue({ status: 400, errorBody: '{"error":{"message":"bad request"}}' })
  const created = await g.http('POST', '/v1/schedules', { cron: '* * * * * *', message: 'nightly report' })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const scheduleId = created.body.schedule_id as string
  const failed = await arrival(receiver, 'schedule.run_failed')
  // The first tick's turn is stopped before the next can start: one run, the failed one.
  assert.equal((await g.http('DELETE', `/v1/schedules/${scheduleId}`)).status, 204)
  const data = failed.payload.data as { schedule_id: string, turn_id?: string, reason: string }
  assert.equal(data.schedule_id, scheduleId)
  assert.match(data.reason, /^PROVIDER_ERROR/)
  const turn = await g.http('GET', `/v1/turns/${data.turn_id ?? ''}`)
  assert.equal(turn.body.status, 'failed')
  assert.equal(receiver.rejected, 0)
})
