/**
 * The provider client's retries and total deadline against the real fake provider (an HTTP server
 * speaking chat completions): scripted 500s, 429s with Retry-After, connection resets before and
 * after text was streamed, and a stream that trickles on.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Socket } from 'node:net'
import type { EventEnvelope } from '../../schemas/events.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/log-capture.js'
import { runTurn, startTurn } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

type Logger = ReturnType<typeof captureLogs>['logger']

async function gateway (t: TestContext, provider: Record<string, unknown> = {}, logger?: Logger): Promise<TestGateway> {
  const g = await startGateway({
    overrides: { providers: { fake: { max_retries: 2, retry_initial_delay_ms: 10, ...provider } } },
    ...(logger === undefined ? {} : { logger })
  })
  t.after(() => g.close())
  return g
}

function streamedText (events: readonly EventEnvelope[]): string {
  return events.map(({ event }) => (event.kind === 'text.delta' ? event.text : '')).join('')
}

function failure (events: readonly EventEnvelope[]): string | undefined {
  const last = events.at(-1)?.event
  return last?.kind === 'turn.failed' ? last.code : undefined
}

test('a provider 500 is retried and the turn completes with the next answer', async (t) => {
  const logs = captureLogs('info')
  const g = await gateway(t, {}, logs.logger)
  g.provider.enqueue({ status: 500 }, { text: 'recovered' })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, 'recovered')
  assert.equal(streamedText(events), 'recovered')
  assert.equal(g.provider.requests.length, 2)
  const retry = logs.lines().find((l) => l.msg === 'retrying the model call')
  assert.deepEqual([retry?.retry, retry?.status, retry?.code], [1, 500, 'PROVIDER_ERROR'])
})

test('a 429 is retried no sooner than its Retry-After asks', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ status: 429, headers: { 'retry-after': '1' } }, { text: 'ok' })
  const { turn } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.final_text, 'ok')
  const [first, second] = g.provider.requests
  assert.ok(first !== undefined && second !== undefined)
  assert.ok(second.at - first.at >= 1000, `retried after ${second.at - first.at} ms`)
})

test('a Retry-After longer than retry_max_delay_ms ends the turn without a retry', async (t) => {
  const g = await gateway(t, { retry_max_delay_ms: 1000 })
  g.provider.enqueue({ status: 429, headers: { 'retry-after': '120' } }, { text: 'never asked' })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.status, 'failed')
  assert.equal(failure(events), 'PROVIDER_ERROR')
  assert.equal(g.provider.requests.length, 1)
})

test('retries stop after max_retries and the last failure ends the turn', async (t) => {
  const g = await gateway(t)
  const stillDown = JSON.stringify({ error: { message: 'still down' } })
  g.provider.enqueue({ status: 503 }, { status: 502 }, { status: 500, errorBody: stillDown }, { text: 'too late' })
  const { events } = await runTurn(g, { message: 'hi' })
  assert.equal(failure(events), 'PROVIDER_ERROR')
  const last = events.at(-1)?.event
  assert.match(last?.kind === 'turn.failed' ? last.message : '', /HTTP 500: .*still down/)
  assert.equal(g.provider.requests.length, 3)
})

test('a 400 is the request\'s fault and is not retried', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ status: 400 }, { text: 'never asked' })
  const { events } = await runTurn(g, { message: 'hi' })
  assert.equal(failure(events), 'PROVIDER_ERROR')
  assert.equal(g.provider.requests.length, 1)
})

test('a connection reset before the answer is retried', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ resetAfter: 0 }, { text: 'after the reset' })
  const { turn } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.final_text, 'after the reset')
  assert.equal(g.provider.requests.length, 2)
})

test('a stream cut before its first text is retried and every text.delta arrives exactly once', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ text: 'hello from the stream', resetAfter: 1 }, { text: 'hello from the stream' })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.status, 'completed')
  assert.equal(streamedText(events), 'hello from the stream')
  assert.equal(g.provider.requests.length, 2)
})

test('a stream cut after text reached clients is not retried, so no text is repeated', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ text: 'abcdefghijklmnopqrstuvwxyz', resetAfter: 3 }, { text: 'abcdefghijklmnopqrstuvwxyz' })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.status, 'failed')
  assert.equal(failure(events), 'PROVIDER_UNAVAILABLE')
  assert.equal(streamedText(events), 'abcdefghijklmnop')
  assert.equal(g.provider.requests.length, 1)
})

test('a stream that ends cleanly before its finish_reason is an incomplete answer and is retried', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ text: 'whole answer', endAfter: 1 }, { text: 'whole answer' })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.final_text, 'whole answer')
  assert.equal(streamedText(events), 'whole answer')
  assert.equal(g.provider.requests.length, 2)
})

test('connection failures are retried max_retries times', async (t) => {
  const sockets = new Set<Socket>()
  let connections = 0
  const refuser = createServer((socket) => {
    connections++
    socket.destroy()
  })
  refuser.on('connection', (s) => sockets.add(s))
  await new Promise<void>((resolve) => refuser.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => refuser.close(() => resolve())))
  const port = (refuser.address() as { port: number }).port
  const g = await gateway(t, { base_url: `http://127.0.0.1:${port}/v1` })
  const { events } = await runTurn(g, { message: 'hi' })
  assert.equal(failure(events), 'PROVIDER_UNAVAILABLE')
  assert.equal(connections, 3)
})

test('a trickling stream ends at total_timeout_ms with PROVIDER_TIMEOUT', async (t) => {
  const g = await gateway(t, { total_timeout_ms: 400 })
  g.provider.enqueue({ text: 'x'.repeat(800), chunkDelayMs: 50 })
  const { events } = await runTurn(g, { message: 'hi' })
  assert.equal(failure(events), 'PROVIDER_TIMEOUT')
  const last = events.at(-1)?.event
  assert.match(last?.kind === 'turn.failed' ? last.message : '', /total_timeout_ms \(400 ms\)/)
  assert.ok(streamedText(events).length < 800, 'the stream was cut, not read to its end')
  assert.equal(g.provider.requests.length, 1)
  await eventually(() => g.provider.open() === 0, { what: 'the provider request to be closed' })
})

test('a stream that sends [DONE] but never ends its response completes the turn, and the response is cut off', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ text: 'whole answer', openAfterDone: true })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, 'whole answer')
  assert.equal(streamedText(events), 'whole answer')
  assert.equal(g.provider.requests.length, 1)
  await eventually(() => g.provider.open() === 0, { what: 'the provider response to be cut off' })
})

test('cancelling a turn ends a retry wait at once', async (t) => {
  const g = await gateway(t, { retry_initial_delay_ms: 60_000, retry_max_delay_ms: 60_000 })
  g.provider.enqueue({ status: 500 }, { text: 'never asked' })
  const { turn_id: turnId } = await startTurn(g, { message: 'hi' })
  await eventually(() => g.provider.requests.length === 1, { what: 'the first attempt' })
  const cancelled = await g.http('DELETE', `/v1/turns/${turnId}`)
  assert.equal(cancelled.status, 200)
  const turn = (await g.http('GET', `/v1/turns/${turnId}`)).body
  assert.equal(turn.status, 'cancelled')
  assert.equal(g.provider.requests.length, 1)
})
