import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { parseExposition, presentValueOf, valueOf, type Sample } from '../helpers/prometheus.js'
import { jwtAuth } from '../helpers/tokens.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'
import { eventually } from '../helpers/eventually.js'

async function setup (t: { after: (fn: () => Promise<void>) => void }, extra: Record<string, unknown> = {}): Promise<TestGateway> {
  const g = await startGateway({ tools: createProbes().tools, overrides: probeOverrides(extra) })
  t.after(async () => { await g.close() })
  return g
}

async function scrape (g: TestGateway): Promise<Sample[]> {
  const res = await fetch(`${g.url}/metrics`)
  assert.equal(res.status, 200)
  return await parseExposition(await res.text())
}

/** Gauges follow server-side state that settles a moment after the client acts; no timing assumed, only a bound. */
async function scrapeUntil (g: TestGateway, check: (samples: Sample[]) => boolean): Promise<Sample[]> {
  let samples: Sample[] = []
  await eventually(async () => check(samples = await scrape(g)), { what: 'the metric to reach the expected value' })
  return samples
}

const probe = (id: string, args: Record<string, unknown>): { id: string, name: string, arguments: Record<string, unknown> } => ({ id, name: 'probe', arguments: args })

test('/metrics answers Prometheus text without credentials', async (t) => {
  const g = await setup(t)
  const res = await fetch(`${g.url}/metrics`)
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
  const text = await res.text()
  assert.match(text, /^# HELP tollgate_tool_calls_total /m)
  assert.match(text, /^# TYPE tollgate_tool_call_duration_seconds histogram$/m)
  assert.match(text, /^process_cpu_user_seconds_total /m)
})

test('/metrics stays open when every /v1 route needs a bearer token', async (t) => {
  const g = await setup(t, jwtAuth())
  assert.equal((await g.http('GET', '/v1/tools')).status, 401)
  const res = await fetch(`${g.url}/metrics`)
  assert.equal(res.status, 200)
  assert.match(await res.text(), /^# TYPE tollgate_turns_total counter$/m)
})

test('a scripted turn is counted: tool calls by tool and status, their durations, the turn and its provider requests', async (t) => {
  const g = await setup(t)
  g.provider.enqueue(
    { toolCalls: [probe('c1', { label: 'a' }), probe('c2', { label: 'b', fail: true }), { id: 'c3', name: 'invented_tool', arguments: {} }], usage: { prompt_tokens: 30, completion_tokens: 7 } },
    { text: 'done', usage: { prompt_tokens: 50, completion_tokens: 3 } }
  )
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.equal(res.body.status, 'completed')
  const m = await scrape(g)
  assert.equal(valueOf(m, 'tollgate_tool_calls_total', { tool: 'probe', status: 'ok' }), 1)
  assert.equal(valueOf(m, 'tollgate_tool_calls_total', { tool: 'probe', status: 'error' }), 1)
  assert.equal(valueOf(m, 'tollgate_tool_calls_total', { tool: '_unknown', status: 'error' }), 1, 'a name the model invented never becomes a label')
  assert.equal(m.some((s) => s.labels.tool === 'invented_tool'), false)
  assert.equal(valueOf(m, 'tollgate_tool_call_duration_seconds_count', { tool: 'probe', status: 'ok' }), 1)
  assert.equal(valueOf(m, 'tollgate_tool_call_duration_seconds_bucket', { tool: 'probe', status: 'ok', le: '+Inf' }), 1)
  assert.equal(valueOf(m, 'tollgate_turns_total', { status: 'completed' }), 1)
  assert.equal(valueOf(m, 'tollgate_provider_request_duration_seconds_count', { provider: 'fake', model: 'fake-model', outcome: 'ok' }), 2)
  assert.equal(valueOf(m, 'tollgate_provider_tokens_total', { provider: 'fake', token_type: 'input' }), 80)
  assert.equal(valueOf(m, 'tollgate_provider_tokens_total', { provider: 'fake', token_type: 'output' }), 10)
  assert.equal(valueOf(m, 'tollgate_provider_errors_total', { provider: 'fake' }), 0)
})

test('series with a fixed label set exist at zero before anything happened', async (t) => {
  const g = await setup(t)
  const m = await scrape(g)
  for (const status of ['completed', 'cancelled', 'failed']) {
    assert.equal(presentValueOf(m, 'tollgate_turns_total', { status }), 0, status)
    assert.equal(presentValueOf(m, 'tollgate_turn_duration_seconds_count', { status }), 0, status)
  }
  for (const transport of ['ws', 'sse']) assert.equal(presentValueOf(m, 'tollgate_events_sent_total', { transport }), 0)
  assert.equal(presentValueOf(m, 'tollgate_approvals_total', { decision: 'auto-deny', channel: 'runtime' }), 0)
  assert.equal(presentValueOf(m, 'tollgate_approvals_total', { decision: 'yes', channel: 'rest' }), 0)
  const model = { provider: 'fake', model: 'fake-model' }
  assert.equal(presentValueOf(m, 'tollgate_provider_errors_total', model), 0)
  assert.equal(presentValueOf(m, 'tollgate_provider_request_duration_seconds_count', { ...model, outcome: 'error' }), 0)
  for (const tokenType of ['input', 'output']) {
    assert.equal(presentValueOf(m, 'tollgate_provider_tokens_total', { ...model, token_type: tokenType }), 0)
  }
  assert.equal(m.some((s) => s.name === 'tollgate_provider_tokens_total' && 'type' in s.labels), false, 'the token label is token_type')
  for (const step of ['model', 'approval', 'dispatch']) assert.equal(presentValueOf(m, 'tollgate_checkpoint_failures_total', { step }), 0, step)
})

test('a known workload is counted exactly: turns and their durations, sub-millisecond tool calls, provider requests', async (t) => {
  const g = await setup(t)
  g.provider.enqueue(
    {
      toolCalls: [probe('c1', { label: 'a' }), probe('c2', { label: 'b', fail: true }), { id: 'c3', name: 'invented_tool', arguments: {} }],
      usage: { prompt_tokens: 30, completion_tokens: 7 }
    },
    { text: 'done', usage: { prompt_tokens: 50, completion_tokens: 3 } },
    { status: 503 },
    { toolCalls: [probe('c4', { label: 'slow', ms: 10_000 })] }
  )
  assert.equal((await g.http('POST', '/v1/turns?wait=true', { message: 'go' })).body.status, 'completed')
  assert.equal((await g.http('POST', '/v1/turns?wait=true', { message: 'go' })).body.status, 'failed')
  const ws = await g.socket()
  const sent = performance.now()
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'tool_call')
  await ws.request({ type: 'cancel', turn_id: accepted.turn_id })
  await ws.waitForTerminal(accepted.turn_id)
  // What the client saw of the cancelled turn bounds the duration the gateway measured.
  const seenSeconds = (performance.now() - sent) / 1000
  // turn_end is recorded once the turn is persisted, just after its terminal event went out.
  const m = await scrapeUntil(g, (s) => valueOf(s, 'tollgate_turns_total', { status: 'cancelled' }) === 1)

  for (const status of ['completed', 'failed', 'cancelled']) {
    assert.equal(presentValueOf(m, 'tollgate_turns_total', { status }), 1, status)
    assert.equal(presentValueOf(m, 'tollgate_turn_duration_seconds_count', { status }), 1, status)
    assert.ok(presentValueOf(m, 'tollgate_turn_duration_seconds_sum', { status }) > 0, status)
  }
  const cancelledSum = presentValueOf(m, 'tollgate_turn_duration_seconds_sum', { status: 'cancelled' })
  assert.ok(cancelledSum > 0 && cancelledSum <= seenSeconds, `the cancelled turn's measured ${cancelledSum} s within the ${seenSeconds} s the client saw`)
  const tools = (status: string, tool = 'probe'): Record<string, string> => ({ tool, status })
  assert.deepEqual(
    [valueOf(m, 'tollgate_tool_calls_total', tools('ok')), valueOf(m, 'tollgate_tool_calls_total', tools('error')),
      valueOf(m, 'tollgate_tool_calls_total', tools('interrupted')), valueOf(m, 'tollgate_tool_calls_total', tools('error', '_unknown'))],
    [1, 1, 1, 1]
  )
  // The unknown tool took no time: it lands in the lowest bucket, half a millisecond.
  assert.equal(presentValueOf(m, 'tollgate_tool_call_duration_seconds_bucket', { ...tools('error', '_unknown'), le: '0.0005' }), 1)
  const okSum = presentValueOf(m, 'tollgate_tool_call_duration_seconds_sum', tools('ok'))
  assert.ok(okSum > 0 && okSum < 5, `${okSum}`)
  assert.notEqual(okSum, Math.round(okSum * 1000) / 1000, 'durations are not rounded to whole milliseconds')
  const buckets = m
    .filter((s) => s.name === 'tollgate_tool_call_duration_seconds_bucket' && s.labels.tool === 'probe' && s.labels.status === 'ok')
    .map((s) => s.labels.le ?? '')
  const bound = (le: string): number => (le === '+Inf' ? Infinity : Number(le))
  assert.deepEqual(buckets.sort((a, b) => bound(a) - bound(b)).slice(0, 4), ['0.0005', '0.001', '0.0025', '0.005'])

  const model = { provider: 'fake', model: 'fake-model' }
  // Two requests of the completed turn and the one of the cancelled turn answered; the failed turn's did not.
  assert.equal(presentValueOf(m, 'tollgate_provider_request_duration_seconds_count', { ...model, outcome: 'ok' }), 3)
  assert.equal(presentValueOf(m, 'tollgate_provider_request_duration_seconds_count', { ...model, outcome: 'error' }), 1)
  assert.equal(presentValueOf(m, 'tollgate_provider_errors_total', model), 1)
  // 30 + 50 scripted, 10 + 5 the fake provider's default usage for the cancelled turn's request.
  assert.equal(presentValueOf(m, 'tollgate_provider_tokens_total', { ...model, token_type: 'input' }), 90)
  assert.equal(presentValueOf(m, 'tollgate_provider_tokens_total', { ...model, token_type: 'output' }), 15)
})

test('a failing provider is counted as a provider error and a failed turn', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ status: 503 })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.equal(res.body.status, 'failed')
  const m = await scrape(g)
  assert.equal(valueOf(m, 'tollgate_provider_errors_total', { provider: 'fake', model: 'fake-model' }), 1)
  assert.equal(valueOf(m, 'tollgate_provider_request_duration_seconds_count', { provider: 'fake', outcome: 'error' }), 1)
  assert.equal(valueOf(m, 'tollgate_turns_total', { status: 'failed' }), 1)
})

test('approval decisions are counted by decision and deciding channel', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'x' } }] }, { text: 'ok' }, { toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'y' } }] }, { text: 'ok' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const asked = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  assert.ok(asked.event.kind === 'approval.requested')
  await ws.request({ type: 'approval.respond', request_id: asked.event.request_id, decision: 'yes' })
  await ws.waitForTerminal(accepted.turn_id)
  await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  const m = await scrape(g)
  assert.equal(valueOf(m, 'tollgate_approvals_total', { decision: 'yes', channel: 'websocket' }), 1)
  assert.equal(valueOf(m, 'tollgate_approvals_total', { decision: 'auto-deny', channel: 'runtime' }), 1)
  assert.equal(valueOf(m, 'tollgate_tool_calls_total', { tool: 'risky', status: 'ok' }), 1, 'the denied call never ran, so only the approved one is a tool call')
})

test('events_sent_total counts every event frame written to a WebSocket and every SSE event', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' })] }, { text: 'done' }, { text: 'streamed' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const wsEvents = await ws.waitForTerminal(accepted.turn_id)
  const sse = await fetch(`${g.url}/v1/turns`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify({ message: 'go' }) })
  const sseEvents = (await sse.text()).split('\n\n').filter((block) => block.startsWith('id: '))
  assert.ok(sseEvents.length >= 4)
  const m = await scrape(g)
  assert.equal(valueOf(m, 'tollgate_events_sent_total', { transport: 'ws' }), wsEvents.length)
  assert.equal(valueOf(m, 'tollgate_events_sent_total', { transport: 'sse' }), sseEvents.length)
})

test('turns_active and ws_connections follow the live turns and sockets', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'slow', ms: 10_000 })] })
  const owner = await g.socket()
  const watcher = await g.socket()
  await scrapeUntil(g, (m) => valueOf(m, 'tollgate_ws_connections') === 2)
  const accepted = await owner.request({ type: 'turn.start', message: 'go' })
  await owner.waitForEvent(accepted.turn_id, (e) => e.kind === 'tool_call')
  assert.equal(valueOf(await scrape(g), 'tollgate_turns_active'), 1)
  await owner.request({ type: 'cancel', turn_id: accepted.turn_id })
  await owner.waitForTerminal(accepted.turn_id)
  owner.close()
  watcher.close()
  const m = await scrapeUntil(g, (s) => valueOf(s, 'tollgate_ws_connections') === 0)
  assert.equal(valueOf(m, 'tollgate_turns_active'), 0)
  assert.equal(valueOf(m, 'tollgate_turns_total', { status: 'cancelled' }), 1)
  assert.equal(valueOf(m, 'tollgate_tool_calls_total', { tool: 'probe', status: 'interrupted' }), 1)
})

test('no label value is a turn, session or call id', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' })] }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go', session_id: 'session-visible-in-no-label' })
  const text = await (await fetch(`${g.url}/metrics`)).text()
  for (const id of [res.body.turn_id, res.body.session_id, res.body.tool_calls[0].call_id, 'c1']) assert.equal(text.includes(`"${String(id)}"`), false, id)
  const ours = (await parseExposition(text)).filter((s) => s.name.startsWith('tollgate_'))
  const labelNames = new Set(ours.flatMap((s) => Object.keys(s.labels)))
  const bounded = new Set(['channel', 'decision', 'le', 'model', 'outcome', 'provider', 'status', 'step', 'tool', 'transport', 'token_type'])
  for (const name of labelNames) assert.ok(bounded.has(name), `unexpected label ${name}`)
})

test('two gateways in one process keep separate counts', async (t) => {
  const a = await setup(t)
  const b = await setup(t)
  a.provider.enqueue({ text: 'one' })
  await a.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.equal(valueOf(await scrape(a), 'tollgate_turns_total', { status: 'completed' }), 1)
  assert.equal(valueOf(await scrape(b), 'tollgate_turns_total', { status: 'completed' }), 0)
})

test('metrics.enabled = false serves no /metrics', async (t) => {
  const g = await setup(t, { metrics: { enabled: false } })
  const res = await g.http('GET', '/metrics')
  assert.deepEqual([res.status, res.body.code], [404, 'NOT_FOUND'])
  assert.equal(g.gateway.metrics, null)
})

test('metrics.prefix renames every gateway metric', async (t) => {
  const g = await setup(t, { metrics: { prefix: 'edge_', process_metrics: false } })
  const text = await (await fetch(`${g.url}/metrics`)).text()
  assert.match(text, /^# TYPE edge_turns_total counter$/m)
  assert.doesNotMatch(text, /tollgate_|process_cpu/)
})
