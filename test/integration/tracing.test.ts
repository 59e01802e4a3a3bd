import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'
import { eventually } from '../helpers/eventually.js'

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

function pick (span: ReadableSpan, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.flatMap((k) => span.attributes[k] === undefined ? [] : [[k, span.attributes[k]]]))
}

function named (spans: readonly ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((s) => s.name === name)
}

/**
 * In start order. The SDK stamps a span's start from Date.now() (whole milliseconds), so spans
 * started within one millisecond keep the exporter's order, which is the order they ended in.
 */
function childrenOf (spans: readonly ReadableSpan[], parent: ReadableSpan): ReadableSpan[] {
  return spans
    .filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId)
    .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])
}

test('a turn over HTTP is an invoke_agent span over iteration spans holding chat and execute_tool spans, with GenAI attributes', async (t) => {
  const exporter = registerSdk(t)
  const g = await setup(t)
  g.provider.enqueue(
    {
      toolCalls: [
        probe('prov-1', { label: 'a' }), probe('prov-2', { label: 'b', fail: true }), { id: 'prov-3', name: 'no_such_tool', arguments: {} }
      ],
      usage: { prompt_tokens: 30, completion_tokens: 7 },
      responseId: 'chatcmpl-round-1',
      responseModel: 'fake-model-2026-01-01'
    },
    { text: 'done', usage: { prompt_tokens: 50, completion_tokens: 3 }, responseId: 'chatcmpl-round-2' }
  )
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go', session_id: 's-trace' })
  assert.equal(res.body.status, 'completed')
  const spans = exporter.getFinishedSpans()
  const roots = spans.filter((s) => s.parentSpanContext === undefined)
  assert.deepEqual(roots.map((s) => s.name), ['invoke_agent default'])
  const turn = roots[0] as ReadableSpan
  assert.equal(turn.kind, SpanKind.INTERNAL)
  const turnKeys = ['gen_ai.operation.name', 'gen_ai.agent.name', 'gen_ai.conversation.id', 'gen_ai.provider.name', 'gen_ai.request.model',
    'tollgate.turn.status', 'tollgate.turn.iterations']
  assert.deepEqual(pick(turn, turnKeys), {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.name': 'default',
    'gen_ai.conversation.id': 's-trace',
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': 'fake-model',
    'tollgate.turn.status': 'completed',
    'tollgate.turn.iterations': 2
  })
  assert.equal(turn.status.code, SpanStatusCode.UNSET)

  const rounds = childrenOf(spans, turn)
  assert.deepEqual(rounds.map((s) => [s.name, s.attributes['tollgate.iteration']]), [['tollgate.iteration', 1], ['tollgate.iteration', 2]])
  const [first, second] = rounds as [ReadableSpan, ReadableSpan]
  assert.deepEqual(childrenOf(spans, first).map((s) => s.name), [
    'chat fake-model', 'execute_tool probe', 'execute_tool probe', 'execute_tool no_such_tool'
  ])
  assert.deepEqual(childrenOf(spans, second).map((s) => s.name), ['chat fake-model'])

  const server = new URL(g.provider.baseUrl)
  const chats = [childrenOf(spans, first)[0], childrenOf(spans, second)[0]] as [ReadableSpan, ReadableSpan]
  const chatKeys = ['gen_ai.operation.name', 'gen_ai.provider.name', 'gen_ai.request.model', 'gen_ai.response.model', 'gen_ai.response.id',
    'gen_ai.response.finish_reasons', 'gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens', 'server.address', 'server.port']
  const chatCommon = {
    'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'fake-model',
    'server.address': '127.0.0.1', 'server.port': Number(server.port)
  }
  assert.deepEqual(pick(chats[0], chatKeys), {
    ...chatCommon, 'gen_ai.response.model': 'fake-model-2026-01-01', 'gen_ai.response.id': 'chatcmpl-round-1',
    'gen_ai.response.finish_reasons': ['tool_calls'], 'gen_ai.usage.input_tokens': 30, 'gen_ai.usage.output_tokens': 7
  })
  assert.deepEqual(pick(chats[1], chatKeys), {
    ...chatCommon, 'gen_ai.response.model': 'fake-model', 'gen_ai.response.id': 'chatcmpl-round-2',
    'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.usage.input_tokens': 50, 'gen_ai.usage.output_tokens': 3
  })
  assert.ok(chats.every((c) => c.kind === SpanKind.CLIENT && c.status.code === SpanStatusCode.UNSET))

  const tools = childrenOf(spans, first).slice(1)
  const toolKeys = ['gen_ai.operation.name', 'gen_ai.tool.name', 'gen_ai.tool.type', 'gen_ai.tool.call.id', 'tollgate.tool.call_id',
    'tollgate.tool.status', 'error.type']
  const ids = res.body.tool_calls.map((c: { call_id: string }) => c.call_id) as string[]
  assert.deepEqual(tools.map((s) => pick(s, toolKeys)), [
    {
      'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'probe', 'gen_ai.tool.type': 'function',
      'gen_ai.tool.call.id': 'prov-1', 'tollgate.tool.call_id': ids[0], 'tollgate.tool.status': 'ok'
    },
    {
      'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'probe', 'gen_ai.tool.type': 'function',
      'gen_ai.tool.call.id': 'prov-2', 'tollgate.tool.call_id': ids[1], 'tollgate.tool.status': 'error', 'error.type': 'tool_error'
    },
    {
      'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'no_such_tool',
      'gen_ai.tool.call.id': 'prov-3', 'tollgate.tool.call_id': ids[2], 'tollgate.tool.status': 'error', 'error.type': 'unknown_tool'
    }
  ])
  assert.deepEqual(tools.map((s) => s.status.code), [SpanStatusCode.UNSET, SpanStatusCode.ERROR, SpanStatusCode.ERROR])
  assert.ok(tools.every((s) => s.kind === SpanKind.INTERNAL))

  const correlation = {
    'tollgate.turn_id': res.body.turn_id, 'tollgate.session_id': 's-trace', 'tollgate.agent': 'default', 'tollgate.channel': 'http'
  }
  for (const span of spans) {
    assert.equal(span.spanContext().traceId, turn.spanContext().traceId)
    for (const [k, v] of Object.entries(correlation)) assert.equal(span.attributes[k], v, `${span.name} ${k}`)
  }
  assert.equal(JSON.stringify(spans.map((s) => s.attributes)).includes('done a'), false, 'results stay out of spans')
})

test('a failed provider request and its failed turn carry error.type and an error status', async (t) => {
  const exporter = registerSdk(t)
  const g = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'x' } }] }, { status: 500 })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  assert.equal(res.body.status, 'failed')
  const spans = exporter.getFinishedSpans()
  const [turn] = named(spans, 'invoke_agent default')
  assert.ok(turn !== undefined)
  const approvals = turn.events.map((e) => [e.name, e.attributes?.['tollgate.approval.decision'], e.attributes?.['gen_ai.tool.name']])
  assert.deepEqual(approvals, [['approval', 'auto-deny', 'risky']])
  assert.deepEqual(turn.status, { code: SpanStatusCode.ERROR, message: res.body.error.code })
  assert.equal(turn.attributes['error.type'], res.body.error.code)
  const chats = named(spans, 'chat fake-model')
  assert.deepEqual(chats.map((s) => [s.status.code, s.attributes['error.type']]), [
    [SpanStatusCode.UNSET, undefined], [SpanStatusCode.ERROR, res.body.error.code]
  ])
  assert.deepEqual(named(spans, 'execute_tool risky'), [], 'a denied call never ran: no execute_tool span')
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
  await eventually(() => named(exporter.getFinishedSpans(), 'invoke_agent default').length > 0, { what: 'the turn span to end' })
  const spans = exporter.getFinishedSpans()
  const [chat] = named(spans, 'chat fake-model')
  const [turn] = named(spans, 'invoke_agent default')
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

test('a delegated sub-turn\'s requests and calls stay inside the parent\'s round instead of closing it', async (t) => {
  const exporter = registerSdk(t)
  const g = await startGateway({
    overrides: { agents: { default: { tools: ['file_read', 'delegate'] } }, risk_profiles: { default: { level: 'full' } } }
  })
  t.after(async () => { await g.close() })
  await writeFile(join(g.workspace, 'a.txt'), 'a says hi')
  g.provider.enqueue(
    { toolCalls: [{ id: 'p1', name: 'delegate', arguments: { task: 'Read a.txt.', tools: ['file_read'] } }] },
    { toolCalls: [{ id: 's1', name: 'file_read', arguments: { path: 'a.txt' } }] },
    { text: 'It says: a says hi' },
    { text: 'The sub-agent read it.' }
  )
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'delegate the reading' })
  assert.equal(res.body.status, 'completed')
  const spans = exporter.getFinishedSpans()
  const [turn] = named(spans, 'invoke_agent default')
  assert.ok(turn !== undefined)
  const rounds = childrenOf(spans, turn)
  assert.deepEqual(rounds.map((s) => s.attributes['tollgate.iteration']), [1, 2])
  const inFirst = childrenOf(spans, rounds[0] as ReadableSpan)
  assert.deepEqual(inFirst.map((s) => s.name).sort(), [
    'chat fake-model', 'chat fake-model', 'chat fake-model', 'execute_tool delegate', 'execute_tool file_read'
  ])
  const delegate = named(spans, 'execute_tool delegate')[0]
  assert.ok(delegate !== undefined)
  assert.deepEqual([delegate.attributes['tollgate.tool.status'], delegate.attributes['tollgate.unfinished']], ['ok', undefined])
})

test('a non-streaming provider\'s completion id, answering model and finish reason reach the chat span too', async (t) => {
  const exporter = registerSdk(t)
  const g = await setup(t, { providers: { fake: { stream: false } } })
  g.provider.enqueue({ text: 'plain', responseId: 'chatcmpl-json', responseModel: 'fake-model-json' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.equal(res.body.status, 'completed')
  assert.equal(g.provider.requests[0]?.body.stream, false)
  const [chat] = named(exporter.getFinishedSpans(), 'chat fake-model')
  assert.ok(chat !== undefined)
  assert.deepEqual(pick(chat, ['gen_ai.response.id', 'gen_ai.response.model', 'gen_ai.response.finish_reasons']), {
    'gen_ai.response.id': 'chatcmpl-json', 'gen_ai.response.model': 'fake-model-json', 'gen_ai.response.finish_reasons': ['stop']
  })
})
