/**
 * `kind = "anthropic"` against a server speaking the Messages API: thinking streamed as
 * reasoning, signed thinking blocks passed back unchanged with the tool_use and its tool_result,
 * headers, top-level system, max_tokens, cache breakpoints, usage with cache counts, and the
 * error body and Retry-After on the retry rules.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EventEnvelope } from '../../schemas/events.js'
import { startFakeAnthropic, type FakeAnthropic } from '../helpers/fake-anthropic.js'
import type { TestGateway } from '../helpers/gateway.js'
import { startProbeGateway } from '../helpers/tools.js'
import { finishedTurn, runTurn, turnEvents } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

async function claude (t: TestContext, provider: Record<string, unknown> = {}): Promise<{ g: TestGateway, api: FakeAnthropic }> {
  const api = await startFakeAnthropic()
  t.after(async () => { await api.close() })
  const { g } = await startProbeGateway(t, {
    providers: {
      claude: {
        kind: 'anthropic', base_url: api.baseUrl, api_key_env: 'TEST_ANTHROPIC_KEY', model: 'claude-fake', timeout_ms: 5000, max_retries: 0, ...provider
      }
    },
    agents: { default: { provider: 'claude', system_prompt: 'You are terse.' } }
  }, { env: { TEST_ANTHROPIC_KEY: 'sk-ant-test-key' } })
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

const THINKING = 'The user wants x checked; the probe tool does that.'
const SIGNATURE = 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds'

test('a turn with a thinking block, text and a tool_use: the next request carries the signed thinking block, the tool_use and its tool_result', async (t) => {
  const { g, api } = await claude(t, { max_tokens: 8000, thinking_budget_tokens: 2048, cache_breakpoints: ['system', 'tools'] })
  api.enqueue(
    {
      thinking: THINKING,
      signature: SIGNATURE,
      redacted: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP',
      text: 'Let me check that for you.',
      toolUses: [{ id: 'toolu_01A09q90qw90lq917835lq9', name: 'probe', input: { label: 'x' } }],
      usage: { input_tokens: 100, output_tokens: 30, cache_creation_input_tokens: 50, cache_read_input_tokens: 200 }
    },
    { text: 'All good: x is done.', usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 300 } }
  )
  const { turn, events } = await runTurn(g, { message: 'check x' })
  assert.equal(turn.status, 'completed', JSON.stringify(turn))

  const [first, second] = api.requests
  assert.ok(first !== undefined && second !== undefined && api.requests.length === 2)
  assert.equal(first.headers['x-api-key'], 'sk-ant-test-key')
  assert.equal(first.headers['anthropic-version'], '2023-06-01')
  assert.equal(first.headers.authorization, undefined)
  assert.equal(first.body.model, 'claude-fake')
  assert.equal(first.body.max_tokens, 8000)
  assert.equal(first.body.stream, true)
  assert.deepEqual(first.body.thinking, { type: 'enabled', budget_tokens: 2048 })
  assert.equal(first.body.temperature, undefined)
  const system = first.body.system as Array<{ type: string, text: string, cache_control: unknown }>
  assert.equal(system.length, 1)
  assert.match(system[0]?.text ?? '', /^You are terse\./)
  assert.deepEqual(system[0]?.cache_control, { type: 'ephemeral' })
  assert.ok(first.body.messages.every((m) => m.role === 'user' || m.role === 'assistant'), 'no system message in messages')
  assert.deepEqual(first.body.messages, [{ role: 'user', content: 'check x' }])
  const tools = first.body.tools ?? []
  const probe = tools.find((tool) => tool.name === 'probe')
  assert.deepEqual(Object.keys(probe ?? {}).sort(), ['description', 'input_schema', 'name'])
  assert.equal((probe?.input_schema as { type: string }).type, 'object')
  assert.deepEqual(tools.at(-1)?.cache_control, { type: 'ephemeral' })
  assert.equal(tools.filter((tool) => 'cache_control' in tool).length, 1)

  assert.equal(second.body.messages.length, 3)
  assert.deepEqual(second.body.messages[1], {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: THINKING, signature: SIGNATURE },
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
      { type: 'text', text: 'Let me check that for you.' },
      { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'probe', input: { label: 'x' } }
    ]
  })
  const results = second.body.messages[2]
  assert.equal(results?.role, 'user')
  const blocks = results?.content as Array<{ type: string, tool_use_id: string, content: string }>
  assert.equal(blocks.length, 1)
  assert.equal(blocks[0]?.type, 'tool_result')
  assert.equal(blocks[0]?.tool_use_id, 'toolu_01A09q90qw90lq917835lq9')
  assert.match(blocks[0]?.content ?? '', /^done x/)

  assert.equal(joined(events, 'reasoning.delta'), THINKING)
  assert.equal(joined(events, 'text.delta'), 'Let me check that for you.All good: x is done.')
  assert.ok(events.filter((e) => e.event.kind === 'text.delta').length >= 4, 'text streams live, in pieces')
  const usage = {
    prompt_tokens: 660, completion_tokens: 35, total_tokens: 695, reported_calls: 2, unreported_calls: 0, cost_usd: null,
    cache_read_tokens: 500, cache_write_tokens: 50
  }
  const last = events.at(-1)?.event
  assert.deepEqual(last, { kind: 'turn.completed', final_text: 'All good: x is done.', usage })
  assert.deepEqual(turn.usage, usage)
})

test('an answer without thinking sends max_tokens by default and the temperature, and no thinking', async (t) => {
  const { g, api } = await claude(t, { temperature: 0.3, cache_breakpoints: ['history'] })
  api.enqueue({ text: 'Hi.' })
  const { turn } = await runTurn(g, { message: 'hello' })
  assert.equal(turn.status, 'completed')
  const body = api.requests[0]?.body
  assert.equal(body?.max_tokens, 4096)
  assert.equal(body?.temperature, 0.3)
  assert.equal(body?.thinking, undefined)
  assert.equal(typeof body?.system, 'string', 'without a system breakpoint the system prompt is a plain string')
  assert.deepEqual(body?.messages, [{ role: 'user', content: [{ type: 'text', text: 'hello', cache_control: { type: 'ephemeral' } }] }])
})

test('529 overloaded with retry-after is retried on the retry rules, then the answer completes the turn', async (t) => {
  const { g, api } = await claude(t, { max_retries: 2, retry_initial_delay_ms: 1 })
  api.enqueue(
    { status: 529, errorType: 'overloaded_error', headers: { 'retry-after': '0' } },
    { status: 529, errorType: 'overloaded_error', headers: { 'retry-after': '0' } },
    { text: 'Made it.' }
  )
  const { turn, events } = await runTurn(g, { message: 'q' })
  assert.equal(turn.status, 'completed')
  assert.equal(api.requests.length, 3)
  assert.equal(joined(events, 'text.delta'), 'Made it.')
})

test('an overloaded_error event inside the stream before any text is retried; an invalid_request_error event is not', async (t) => {
  const { g, api } = await claude(t, { max_retries: 1, retry_initial_delay_ms: 1 })
  api.enqueue({ streamError: 'overloaded_error' }, { text: 'Second try.' })
  const { turn, events } = await runTurn(g, { message: 'q' })
  assert.equal(turn.status, 'completed')
  assert.equal(api.requests.length, 2)
  assert.equal(joined(events, 'text.delta'), 'Second try.')

  api.enqueue({ streamError: 'invalid_request_error' })
  const failed = await runTurn(g, { message: 'again' })
  assert.equal(failed.turn.status, 'failed')
  assert.equal(failed.turn.error.code, 'PROVIDER_ERROR')
  assert.match(failed.turn.error.message, /invalid_request_error/)
  assert.equal(api.requests.length, 3)
})

test('a 400 invalid_request_error fails the turn at once with the error type, no retry', async (t) => {
  const { g, api } = await claude(t, { max_retries: 2, retry_initial_delay_ms: 1 })
  api.enqueue({ status: 400, errorType: 'invalid_request_error' })
  const { turn, events } = await runTurn(g, { message: 'q' })
  assert.equal(turn.status, 'failed')
  assert.equal(api.requests.length, 1)
  const last = events.at(-1)?.event
  assert.equal(last?.kind, 'turn.failed')
  assert.equal(last?.kind === 'turn.failed' ? last.code : '', 'PROVIDER_ERROR')
  assert.match(last?.kind === 'turn.failed' ? last.message : '', /HTTP 400: invalid_request_error/)
})

test('a JSON answer (stream = false) carries its thinking as one reasoning.delta and its blocks into the next request', async (t) => {
  const { g, api } = await claude(t, { stream: false, thinking_budget_tokens: 1024 })
  api.enqueue(
    { thinking: 'Short.', signature: 'sig-json', toolUses: [{ id: 'toolu_json', name: 'probe', input: { label: 'y' } }] },
    { text: 'Done y.' }
  )
  const { turn, events } = await runTurn(g, { message: 'y please' })
  assert.equal(turn.status, 'completed')
  assert.equal(api.requests[0]?.body.stream, false)
  assert.equal(joined(events, 'reasoning.delta'), 'Short.')
  assert.deepEqual(api.requests[1]?.body.messages[1], {
    role: 'assistant',
    content: [{ type: 'thinking', thinking: 'Short.', signature: 'sig-json' }, { type: 'tool_use', id: 'toolu_json', name: 'probe', input: { label: 'y' } }]
  })
})

test('a turn parked at an approval over a restart resumes on the same provider with its signed thinking block', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-anthropic-durable-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const api = await startFakeAnthropic()
  t.after(async () => { await api.close() })
  const start = async (): Promise<TestGateway> => (await startProbeGateway(t, {
    store: { kind: 'sqlite', sqlite: { path: join(dir, 'tollgate.db') } },
    providers: { claude: { kind: 'anthropic', base_url: api.baseUrl, model: 'claude-fake', timeout_ms: 5000, max_retries: 0, thinking_budget_tokens: 1024 } },
    agents: { default: { provider: 'claude' } }
  })).g
  api.enqueue({ thinking: THINKING, signature: SIGNATURE, toolUses: [{ id: 'toolu_risky', name: 'risky', input: { label: 'r' } }] })
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
  assert.equal(api.requests.length, 2)
  assert.deepEqual(api.requests[1]?.body.messages[1], {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: THINKING, signature: SIGNATURE },
      { type: 'tool_use', id: 'toolu_risky', name: 'risky', input: { label: 'r' } }
    ]
  })
  const result = (api.requests[1]?.body.messages[2]?.content as Array<{ type: string, tool_use_id: string }>)[0]
  assert.deepEqual([result?.type, result?.tool_use_id], ['tool_result', 'toolu_risky'])
  assert.ok((await turnEvents(second, turnId)).some((e) => e.event.kind === 'turn.resumed'))
})
