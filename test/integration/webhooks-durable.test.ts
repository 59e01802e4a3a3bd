/**
 * Webhook deliveries that outlive a process, and instances that share them: a delivery still
 * pending when the gateway is killed (SQLite) is delivered by the restarted process with the same
 * webhook-id; two instances sharing a PostgreSQL store deliver each message once.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startFakeProvider } from '../helpers/fake-provider.js'
import { startGateway } from '../helpers/gateway.js'
import { clusterOverrides, scratchWorkspace } from '../helpers/cluster.js'
import { setup } from '../helpers/durable-sqlite.js'
import { deferrer, scratchSchema } from '../helpers/services.js'
import { runTurn } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'
import { startWebhookReceiver } from '../helpers/webhook-receiver.js'

function notifications (url: string, more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    notifications: {
      webhooks: [{ id: 'main', url, secret_env: 'MAIN_SECRET', events: ['turn.completed'] }],
      allow_private_targets: true,
      poll_ms: 20,
      ...more
    }
  }
}

test('a delivery pending when the gateway is SIGKILLed is delivered after the restart, with the same webhook-id', async (t) => {
  const defer = deferrer(t)
  const receiver = await startWebhookReceiver()
  defer(async () => { await receiver.close() })
  receiver.respond = () => 500
  const s = await setup(defer, notifications(receiver.url, { initial_backoff_ms: 1000, max_backoff_ms: 1000 }))
  const env = { MAIN_SECRET: receiver.secret }
  const first = await s.start({}, env)
  s.provider.enqueue({ text: 'hello' })
  const started = await first.http('POST', '/v1/turns', { message: 'hi', detach: true })
  assert.equal(started.status, 202, JSON.stringify(started.body))
  await eventually(() => receiver.ofType('turn.completed').length > 0, { what: 'the first attempt (answered 500)' })
  await first.kill()
  const refused = receiver.ofType('turn.completed')
  const pending = refused.length

  receiver.respond = () => 204
  const second = await s.start({}, env)
  await eventually(() => receiver.received.some((m) => m.status === 204), { what: 'the delivery after the restart', timeoutMs: 15_000 })
  const delivered = receiver.received.filter((m) => m.status === 204)
  assert.equal(delivered.length, 1)
  assert.equal(delivered[0]?.webhookId, refused[0]?.webhookId)
  assert.equal(delivered[0]?.arrival, pending + 1)
  assert.equal(delivered[0]?.payload.data.turn_id, started.body.turn_id)
  let log: any[] = []
  await eventually(async () => {
    log = (await second.http('GET', '/v1/webhooks/deliveries')).body.items
    return log[0]?.status === 'delivered'
  }, { what: 'the delivery recorded delivered' })
  assert.equal(log.length, 1)
  // An attempt the killed process made but never recorded is not counted: at least once, not exactly once.
  assert.ok(log[0].attempts >= 1 && log[0].attempts <= pending + 1, `attempts ${log[0].attempts}`)
})

test('two instances sharing a PostgreSQL store deliver each message once', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const receiver = await startWebhookReceiver()
  defer(async () => { await receiver.close() })
  const cluster = { provider, schema: scratchSchema(defer) }
  const env = { MAIN_SECRET: receiver.secret }
  // Both poll often, so they race for every delivery.
  const extra = notifications(receiver.url, { poll_ms: 10 })
  const a = await startGateway({ provider, env, overrides: clusterOverrides(cluster, await scratchWorkspace(defer), extra) })
  defer(async () => { await a.close() })
  const b = await startGateway({ provider, env, overrides: clusterOverrides(cluster, await scratchWorkspace(defer), extra) })
  defer(async () => { await b.close() })

  const turns: string[] = []
  for (let i = 0; i < 8; i++) {
    provider.enqueue({ text: `answer ${i}` })
    const { turn } = await runTurn(i % 2 === 0 ? a : b, { message: `question ${i}` })
    assert.equal(turn.status, 'completed')
    turns.push(turn.turn_id as string)
  }
  await eventually(() => receiver.received.length >= turns.length, { what: 'a turn.completed per turn' })
  // Time enough for a second delivery of any of them, had one been claimed twice.
  let settled: any[] = []
  await eventually(async () => {
    settled = (await a.http('GET', '/v1/webhooks/deliveries?status=delivered&limit=200')).body.items
    return settled.length === turns.length
  }, { what: 'every delivery recorded delivered' })
  assert.equal(receiver.received.length, turns.length)
  assert.deepEqual(receiver.received.map((m) => m.payload.data.turn_id).sort(), [...turns].sort())
  assert.equal(new Set(receiver.received.map((m) => m.webhookId)).size, turns.length)
  assert.deepEqual(settled.map((d) => d.attempts), turns.map(() => 1))
})
