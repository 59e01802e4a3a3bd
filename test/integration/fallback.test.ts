/**
 * `agents.<a>.fallback_providers`: a retryable failure before anything streamed moves the call to
 * the next provider, as a `model.fallback` event; the turn records the provider that answered.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { SpanStatusCode, trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { loadConfig } from '../../src/core/config.js'
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { runTurn } from '../helpers/turns.js'

async function withBackup (t: TestContext, primary: Record<string, unknown> = {}): Promise<{ g: TestGateway, backup: FakeProvider }> {
  const backup = await startFakeProvider()
  t.after(async () => { await backup.close() })
  const g = await startGateway({
    overrides: {
      providers: {
        fake: { max_retries: 1, retry_initial_delay_ms: 1, ...primary },
        backup: { kind: 'openai', base_url: backup.baseUrl, model: 'backup-model', timeout_ms: 5000, max_retries: 0 }
      },
      agents: { default: { fallback_providers: ['backup'] } }
    }
  })
  t.after(async () => { await g.close() })
  return { g, backup }
}

test('the first provider answers 503 twice, the second answers: the turn completes and records which provider answered', async (t) => {
  const { g, backup } = await withBackup(t)
  g.provider.enqueue({ status: 503 }, { status: 503 })
  backup.enqueue({ text: 'Backup here.' })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.status, 'completed')
  assert.equal(turn.provider, 'backup')
  assert.equal(g.provider.requests.length, 2)
  assert.equal(backup.requests.length, 1)
  assert.equal(backup.requests[0]?.body.model, 'backup-model')
  const fallback = events.find((e) => e.event.kind === 'model.fallback')?.event
  assert.ok(fallback?.kind === 'model.fallback')
  assert.deepEqual([fallback.from, fallback.to, fallback.code], ['fake', 'backup', 'PROVIDER_ERROR'])
  assert.match(fallback.reason, /HTTP 503/)
  assert.deepEqual(events.map((e) => e.event.kind).filter((k, i, all) => k !== all[i - 1]), [
    'turn.started', 'iteration', 'model.fallback', 'text.delta', 'turn.completed'
  ])
})

test('a turn whose own provider answers records it, and sees no fallback', async (t) => {
  const { g, backup } = await withBackup(t)
  g.provider.enqueue({ text: 'Primary here.' })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.provider, 'fake')
  assert.equal(backup.requests.length, 0)
  assert.equal(events.some((e) => e.event.kind === 'model.fallback'), false)
})

test('a failure that is not retryable (400) does not fall back: the turn fails', async (t) => {
  const { g, backup } = await withBackup(t)
  g.provider.enqueue({ status: 400 })
  const { turn } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.status, 'failed')
  assert.equal(turn.error.code, 'PROVIDER_ERROR')
  assert.equal(backup.requests.length, 0)
})

test('a stream cut after text was shown does not fall back: clients saw the text', async (t) => {
  const { g, backup } = await withBackup(t, { max_retries: 0 })
  g.provider.enqueue({ text: 'Partial answer that is cut off', resetAfter: 3 })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.status, 'failed')
  assert.equal(turn.error.code, 'PROVIDER_UNAVAILABLE')
  assert.equal(backup.requests.length, 0)
  assert.equal(events.some((e) => e.event.kind === 'model.fallback'), false)
})

test('a fallback that is not another configured provider is a configuration error', () => {
  const overrides = (fallback: string): unknown => ({ agents: { default: { fallback_providers: [fallback] } } })
  assert.throws(() => loadConfig({ env: {}, overrides: overrides('missing') }), /fallback_providers: "missing" is not another provider/)
  assert.throws(() => loadConfig({ env: {}, overrides: overrides('demo') }), /fallback_providers: "demo" is not another provider/)
})

test('each provider\'s try is its own chat span; the fallback\'s names the provider it falls back from', async (t) => {
  const exporter = new InMemorySpanExporter()
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  assert.equal(trace.setGlobalTracerProvider(tracer), true)
  t.after(async () => {
    trace.disable()
    await tracer.shutdown()
  })
  const { g, backup } = await withBackup(t, { max_retries: 0 })
  g.provider.enqueue({ status: 503 })
  backup.enqueue({ text: 'Backup here.' })
  const { turn } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.status, 'completed')
  const chats = exporter.getFinishedSpans().filter((s) => s.name.startsWith('chat '))
  assert.deepEqual(chats.map((s) => [s.name, s.attributes['tollgate.provider'], s.attributes['tollgate.fallback_from'], s.status.code]), [
    ['chat fake-model', 'fake', undefined, SpanStatusCode.ERROR],
    ['chat backup-model', 'backup', 'fake', SpanStatusCode.UNSET]
  ])
})
