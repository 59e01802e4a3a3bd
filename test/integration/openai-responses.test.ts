/**
 * `kind = "openai-responses"` against a server speaking the Responses API: reasoning summaries
 * as reasoning.delta, live output text, function calls answered with function_call_output items
 * carrying the model's call_id, and reasoning carried to the next call both ways.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EventEnvelope } from '../../schemas/events.js'
import { startFakeResponses, type FakeResponses } from '../helpers/fake-responses.js'
import type { TestGateway } from '../helpers/gateway.js'
import { startProbeGateway } from '../helpers/tools.js'
import { finishedTurn, runTurn } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

async function responses (t: TestContext, provider: Record<string, unknown> = {}): Promise<{ g: TestGateway, api: FakeResponses }> {
  const api = await startFakeResponses()
  t.after(async () => { await api.close() })
  const { g } = await startProbeGateway(t, {
    providers: {
      oai: {
        kind: 'openai-responses', base_url: api.baseUrl, api_key_env: 'TEST_OPENAI_KEY', model: 'gpt-fake', timeout_ms: 5000, max_retries: 0,
        reasoning_effort: 'low', reasoning_summary: 'auto', ...provider
      }
    },
    agents: { default: { provider: 'oai', system_prompt: 'You are terse.' } }
  }, { env: { TEST_OPENAI_KEY: 'sk-test-openai' } })
  return { g, api }
}

function joined (events: readonly EventEnvelope[], kind: 'text.delta' | 'reasoning.delta'): string {
  return events.map((e) => e.event.kind === kind ? e.event.text : '').join('')
}

/** The id of the turn's pending approval request, once `GET /v1/approvals` lists it. */
async function pendingApproval (g: TestGateway, turnId: string): Promise<string> {
  let id = ''
  await eventually(async () => {
    const res = await g.http('GET', `/v1/approvals?status=pending&turn_id=${turnId}`)
    id = (res.body.items?.[0]?.request_id ?? '') as string
    return id !== ''
  }, { what: 'the approval request' })
  return id
}

const CALL = { call_id: 'call_12345xyz', name: 'probe', arguments: { label: 'x' } }

test('a reasoning item and a function call: the next request sends the encrypted reasoning back with function_call_output for the call_id', async (t) => {
  const { g, api } = await responses(t)
  api.enqueue(
    { responseId: 'resp_1', reasoningSummary: 'Checking x needs the probe tool.', functionCalls: [CALL], usage: { input_tokens: 80, output_tokens: 40, reasoning_tokens: 25 } },
    { responseId: 'resp_2', reasoningSummary: 'It worked.', text: 'x is done, all good.', usage: { input_tokens: 120, output_tokens: 10, cached_tokens: 64, reasoning_tokens: 4 } }
  )
  const { turn, events } = await runTurn(g, { message: 'check x' })
  assert.equal(turn.status, 'completed', JSON.stringify(turn))

  const [first, second] = api.requests
  assert.ok(first !== undefined && second !== undefined && api.requests.length === 2)
  assert.equal(first.headers.authorization, 'Bearer sk-test-openai')
  assert.match(first.body.instructions ?? '', /^You are terse\./)
  assert.deepEqual(first.body.input, [{ role: 'user', content: 'check x' }])
  assert.equal(first.body.stream, true)
  assert.equal(first.body.store, false)
  assert.deepEqual(first.body.include, ['reasoning.encrypted_content'])
  assert.deepEqual(first.body.reasoning, { effort: 'low', summary: 'auto' })
  const probe = first.body.tools?.find((tool) => tool.name === 'probe')
  assert.deepEqual(Object.keys(probe ?? {}).sort(), ['description', 'name', 'parameters', 'strict', 'type'])
  assert.equal(probe?.type, 'function')

  assert.equal(second.body.previous_response_id, undefined)
  assert.deepEqual(second.body.input, [
    { role: 'user', content: 'check x' },
    {
      id: 'rs_resp_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Checking x needs the probe tool.' }],
      encrypted_content: 'gAAAA-encrypted-resp_1'
    },
    { id: 'fc_resp_1_0', type: 'function_call', status: 'completed', call_id: 'call_12345xyz', name: 'probe', arguments: '{"label":"x"}' },
    { type: 'function_call_output', call_id: 'call_12345xyz', output: second.body.input[3]?.output }
  ])
  assert.match(String(second.body.input[3]?.output), /^done x/)

  assert.equal(joined(events, 'reasoning.delta'), 'Checking x needs the probe tool.It worked.')
  assert.equal(joined(events, 'text.delta'), 'x is done, all good.')
  assert.ok(events.filter((e) => e.event.kind === 'text.delta').length >= 2, 'output text streams live, in pieces')
  const usage = {
    prompt_tokens: 200, completion_tokens: 50, total_tokens: 250, reported_calls: 2, unreported_calls: 0, cost_usd: null,
    cache_read_tokens: 64, reasoning_tokens: 29
  }
  assert.deepEqual(events.at(-1)?.event, { kind: 'turn.completed', final_text: 'x is done, all good.', usage })
  assert.deepEqual(turn.usage, usage)
})

test('reasoning_carry = "previous_response_id" chains the stored response and sends only the function_call_output', async (t) => {
  const { g, api } = await responses(t, { reasoning_carry: 'previous_response_id' })
  api.enqueue(
    { responseId: 'resp_A', reasoningSummary: 'Use the probe.', functionCalls: [CALL] },
    { responseId: 'resp_B', text: 'Done.' }
  )
  const { turn } = await runTurn(g, { message: 'check x' })
  assert.equal(turn.status, 'completed')
  const [first, second] = api.requests
  assert.equal(first?.body.store, undefined)
  assert.equal(first?.body.include, undefined)
  assert.equal(first?.body.previous_response_id, undefined)
  assert.equal(second?.body.previous_response_id, 'resp_A')
  assert.equal(second?.body.input.length, 1)
  assert.equal(second?.body.input[0]?.type, 'function_call_output')
  assert.equal(second?.body.input[0]?.call_id, 'call_12345xyz')
  assert.match(second?.body.instructions ?? '', /^You are terse\./)
})

test('a JSON answer (stream = false) carries its reasoning summary as one reasoning.delta', async (t) => {
  const { g, api } = await responses(t, { stream: false })
  api.enqueue({ reasoningSummary: 'Brief.', text: 'Answer.' })
  const { turn, events } = await runTurn(g, { message: 'q' })
  assert.equal(turn.status, 'completed')
  assert.equal(api.requests[0]?.body.stream, false)
  assert.equal(joined(events, 'reasoning.delta'), 'Brief.')
  assert.equal(joined(events, 'text.delta'), 'Answer.')
})

test('a turn parked at an approval over a restart resumes with its encrypted reasoning item and the function call', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-responses-durable-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const api = await startFakeResponses()
  t.after(async () => { await api.close() })
  const start = async (): Promise<TestGateway> => (await startProbeGateway(t, {
    store: { kind: 'sqlite', sqlite: { path: join(dir, 'tollgate.db') } },
    providers: { oai: { kind: 'openai-responses', base_url: api.baseUrl, model: 'gpt-fake', timeout_ms: 5000, max_retries: 0 } },
    agents: { default: { provider: 'oai' } }
  })).g
  api.enqueue({
    responseId: 'resp_park', reasoningSummary: 'Risky needs a yes.', functionCalls: [{ call_id: 'call_park', name: 'risky', arguments: { label: 'r' } }]
  })
  const first = await start()
  const started = await first.http('POST', '/v1/turns', { message: 'do r', detach: true })
  assert.equal(started.status, 202, JSON.stringify(started.body))
  const turnId = started.body.turn_id as string
  await pendingApproval(first, turnId)
  await first.close()

  const second = await start()
  const requestId = await pendingApproval(second, turnId)
  api.enqueue({ text: 'r is done.' })
  const answered = await second.http('POST', `/v1/approvals/${requestId}`, { decision: 'yes' })
  assert.equal(answered.status, 200, JSON.stringify(answered.body))
  const turn = await finishedTurn(second, turnId)
  assert.equal(turn.status, 'completed', JSON.stringify(turn))
  const input = api.requests[1]?.body.input ?? []
  assert.deepEqual(input[1], {
    id: 'rs_resp_park',
    type: 'reasoning',
    summary: [{ type: 'summary_text', text: 'Risky needs a yes.' }],
    encrypted_content: 'gAAAA-encrypted-resp_park'
  })
  assert.deepEqual([input[2]?.type, input[2]?.call_id], ['function_call', 'call_park'])
  assert.deepEqual([input[3]?.type, input[3]?.call_id], ['function_call_output', 'call_park'])
})
