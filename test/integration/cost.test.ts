/**
 * Cost: each model call's reported usage priced at `providers.<p>.pricing`, summed as
 * `usage.cost_usd` on the terminal event and the turn record, and counted per tenant, agent and
 * model on /metrics. An unknown price is null, never 0.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { parseExposition, valueOf } from '../helpers/prometheus.js'
import { runTurn } from '../helpers/turns.js'

async function gateway (t: TestContext, pricing?: Record<string, unknown>): Promise<TestGateway> {
  const g = await startGateway({ overrides: pricing === undefined ? {} : { providers: { fake: { pricing } } } })
  t.after(async () => { await g.close() })
  return g
}

test('10 input tokens at $1000 per million cost $0.01, on turn.completed and on the turn record', async (t) => {
  const g = await gateway(t, { input_usd_per_mtok: 1000, output_usd_per_mtok: 0 })
  g.provider.enqueue({ text: 'done', usage: { prompt_tokens: 10, completion_tokens: 5 } })
  const { turn, events } = await runTurn(g, { message: 'hi' })

  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, reported_calls: 1, unreported_calls: 0, cost_usd: 0.01 }
  assert.deepEqual(events.at(-1)?.event, { kind: 'turn.completed', final_text: 'done', usage })
  assert.deepEqual(turn.usage, usage)
})

test('a per-model price wins over the provider-wide one, and input and output are both priced', async (t) => {
  const g = await gateway(t, {
    input_usd_per_mtok: 1, output_usd_per_mtok: 1, models: { 'fake-model': { input_usd_per_mtok: 2, output_usd_per_mtok: 8 } }
  })
  g.provider.enqueue({ text: 'done', usage: { prompt_tokens: 1000, completion_tokens: 500 } })
  const { turn } = await runTurn(g, { message: 'hi' })
  // 1000 × $2/M + 500 × $8/M = $0.002 + $0.004
  assert.equal(turn.usage.cost_usd, 0.006)
})

test('a model without a price costs null, not 0', async (t) => {
  const g = await gateway(t, { models: { 'another-model': { input_usd_per_mtok: 1, output_usd_per_mtok: 1 } } })
  g.provider.enqueue({ text: 'done' })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.usage.cost_usd, null)
  const last = events.at(-1)?.event
  assert.equal(last?.kind === 'turn.completed' ? last.usage?.cost_usd : 'not completed', null)
})

test('a priced call whose provider reported no usage makes the turn\'s cost null', async (t) => {
  const g = await gateway(t, { input_usd_per_mtok: 1000, output_usd_per_mtok: 0 })
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'file_read', arguments: { path: 'missing.txt' } }], usage: null },
    { text: 'not there', usage: { prompt_tokens: 10, completion_tokens: 1 } }
  )
  const { turn } = await runTurn(g, { message: 'read missing.txt' })
  assert.equal(turn.usage.reported_calls, 1)
  assert.equal(turn.usage.unreported_calls, 1)
  assert.equal(turn.usage.cost_usd, null)
})

test('tollgate_cost_usd_total counts each priced call by tenant, agent and model', async (t) => {
  const g = await gateway(t, { input_usd_per_mtok: 1000, output_usd_per_mtok: 0 })
  g.provider.enqueue({ text: 'one', usage: { prompt_tokens: 10, completion_tokens: 1 } }, { text: 'two', usage: { prompt_tokens: 20, completion_tokens: 1 } })
  await runTurn(g, { message: 'a' })
  await runTurn(g, { message: 'b' })
  const samples = await parseExposition(await (await fetch(`${g.url}/metrics`)).text())
  assert.equal(valueOf(samples, 'tollgate_cost_usd_total', { tenant: 'local', agent: 'default', model: 'fake-model' }), 0.03)
})
