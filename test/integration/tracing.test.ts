import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SpanStatusCode, trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'

/** An SDK registered for this test only, as an operator would register one at process start. */
function registerSdk (t: { after: (fn: () => Promise<void>) => void }): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  assert.equal(trace.setGlobalTracerProvider(provider), true)
  t.after(async () => {
    trace.disable()
    await provider.shutdown()
  })
  return exporter
}

async function setup (t: { after: (fn: () => Promise<void>) => void }, extra: Record<string, unknown> = {}): Promise<TestGateway> {
  const g = await startGateway({ tools: createProbes().tools, overrides: probeOverrides(extra) })
  t.after(async () => { await g.close() })
  return g
}

const probe = (id: string, args: Record<string, unknown>): { id: string, name: string, arguments: Record<string, unknown> } => ({ id, name: 'probe', arguments: args })

function named (spans: readonly ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((s) => s.name === name)
}

test('a turn is a span whose model requests and tool calls are child spans carrying the correlation fields', async (t) => {
  const exporter = registerSdk(t)
  const g = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('prov-1', { label: 'a' }), probe('prov-2', { label: 'b', fail: true })] }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go', session_id: 's-trace' })
  const spans = exporter.getFinishedSpans()
  const [turn, ...otherTurns] = named(spans, 'tollgate.turn')
  assert.ok(turn !== undefined && otherTurns.length === 0)
  const tools = named(spans, 'execute_tool probe')
  const chats = named(spans, 'chat fake-model')
  assert.equal(tools.length, 2)
  assert.equal(chats.length, 2)
  const correlation = { 'tollgate.turn_id': res.body.turn_id, 'tollgate.session_id': 's-trace', 'tollgate.agent': 'default', 'tollgate.channel': 'http' }
  for (const span of [turn, ...tools, ...chats]) {
    for (const [k, v] of Object.entries(correlation)) assert.equal(span.attributes[k], v, `${span.name} ${k}`)
  }
  for (const span of [...tools, ...chats]) {
    assert.equal(span.spanContext().traceId, turn.spanContext().traceId)
    assert.equal(span.parentSpanContext?.spanId, turn.spanContext().spanId)
  }
  const [ok, failed] = tools
  assert.deepEqual(
    [ok?.attributes['gen_ai.tool.call.id'], ok?.attributes['tollgate.provider_call_id'], ok?.attributes['tollgate.tool.status'], ok?.status.code],
    [res.body.tool_calls[0].call_id, 'prov-1', 'ok', SpanStatusCode.UNSET]
  )
  assert.deepEqual([failed?.attributes['tollgate.tool.status'], failed?.status.code], ['error', SpanStatusCode.ERROR])
  assert.equal(chats[0]?.attributes['gen_ai.usage.input_tokens'], 10)
  assert.deepEqual([turn.attributes['tollgate.turn.status'], turn.attributes['tollgate.turn.iterations']], ['completed', 2])
  assert.equal(JSON.stringify(spans.map((s) => s.attributes)).includes('done a'), false, 'results stay out of spans')
})

test('approval decisions are events on the turn span and a failed turn span has an error status', async (t) => {
  const exporter = registerSdk(t)
  const g = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'x' } }] }, { status: 500 })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  assert.equal(res.body.status, 'failed')
  const [turn] = named(exporter.getFinishedSpans(), 'tollgate.turn')
  assert.ok(turn !== undefined)
  assert.deepEqual(turn.events.map((e) => [e.name, e.attributes?.['tollgate.approval.decision'], e.attributes?.['gen_ai.tool.name']]), [['approval', 'auto-deny', 'risky']])
  assert.deepEqual(turn.status, { code: SpanStatusCode.ERROR, message: res.body.error.code })
  const failedChat = named(exporter.getFinishedSpans(), 'chat fake-model').find((s) => s.status.code === SpanStatusCode.ERROR)
  assert.ok(failedChat !== undefined)
})

test('a model request cut off by cancellation ends with its turn instead of staying open', async (t) => {
  const exporter = registerSdk(t)
  const g = await setup(t)
  g.provider.enqueue({ hang: true })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'iteration')
  await ws.request({ type: 'cancel', turn_id: accepted.turn_id })
  await ws.waitForTerminal(accepted.turn_id)
  // The turn span ends right after the terminal event is recorded: wait for it, with a bound.
  const deadline = Date.now() + 5000
  while (named(exporter.getFinishedSpans(), 'tollgate.turn').length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
  const spans = exporter.getFinishedSpans()
  const [chat] = named(spans, 'chat fake-model')
  const [turn] = named(spans, 'tollgate.turn')
  assert.equal(chat?.attributes['tollgate.unfinished'], true)
  assert.equal(turn?.attributes['tollgate.turn.status'], 'cancelled')
})

test('tracing.enabled = false emits no spans even with an SDK registered', async (t) => {
  const exporter = registerSdk(t)
  const g = await setup(t, { tracing: { enabled: false } })
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' })] }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.equal(res.body.status, 'completed')
  assert.deepEqual(exporter.getFinishedSpans(), [])
})
