/**
 * Token usage: the provider-reported prompt and completion tokens of a turn's model calls,
 * summed on the turn record (GET /v1/turns/:id, every store) and on the terminal event.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EventEnvelope, TurnEvent } from '../../schemas/events.js'
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { deferrer, PG_URL, scratchSchema } from '../helpers/services.js'

async function gateway (t: TestContext, overrides: Record<string, unknown> = {}, provider?: FakeProvider): Promise<TestGateway> {
  const g = await startGateway({ overrides, ...(provider === undefined ? {} : { provider }) })
  t.after(async () => { await g.close() })
  return g
}

/** Runs a turn over a WebSocket (its owner) and answers its events and GET /v1/turns/:id. */
async function runTurn (g: TestGateway, message: string): Promise<{ events: EventEnvelope[], turn: any }> {
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message })
  assert.equal(accepted.type, 'turn.accepted', JSON.stringify(accepted))
  const events = await ws.waitForTerminal(accepted.turn_id, 10_000)
  const res = await g.http('GET', `/v1/turns/${accepted.turn_id as string}`)
  assert.equal(res.status, 200)
  return { events, turn: res.body }
}

function terminal (events: readonly EventEnvelope[]): TurnEvent {
  const last = events.at(-1)?.event
  assert.ok(last !== undefined)
  return last
}

const READ_MISSING = [{ id: 'c1', name: 'file_read', arguments: { path: 'missing.txt' } }]

/** One tool round (a file that is not there: an error result, and the loop goes on), then an answer. */
function twoCalls (g: TestGateway, first: { prompt_tokens: number, completion_tokens: number } | null, second: typeof first): void {
  g.provider.enqueue(
    { toolCalls: READ_MISSING, usage: first },
    { text: 'It is not there.', usage: second }
  )
}

test('a streamed turn sums the usage of its two provider calls on turn.completed and on the turn record', async (t) => {
  const g = await gateway(t)
  twoCalls(g, { prompt_tokens: 120, completion_tokens: 17 }, { prompt_tokens: 180, completion_tokens: 9 })
  const { events, turn } = await runTurn(g, 'read missing.txt')

  const usage = { prompt_tokens: 300, completion_tokens: 26, total_tokens: 326, reported_calls: 2, unreported_calls: 0, cost_usd: null }
  assert.deepEqual(terminal(events), { kind: 'turn.completed', final_text: 'It is not there.', usage })
  assert.equal(turn.status, 'completed')
  assert.deepEqual(turn.usage, usage)
  // Streaming requests ask for the usage chunk.
  assert.equal(g.provider.requests.length, 2)
  for (const r of g.provider.requests) {
    assert.equal(r.body.stream, true)
    assert.deepEqual(r.body.stream_options, { include_usage: true })
  }
})

test('a non-streaming provider\'s usage is read from its JSON answers and summed', async (t) => {
  const provider = await startFakeProvider()
  t.after(async () => { await provider.close() })
  const g = await gateway(t, { providers: { fake: { stream: false } } }, provider)
  twoCalls(g, { prompt_tokens: 40, completion_tokens: 4 }, { prompt_tokens: 60, completion_tokens: 6 })
  const { events, turn } = await runTurn(g, 'read missing.txt')

  const usage = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, reported_calls: 2, unreported_calls: 0, cost_usd: null }
  assert.deepEqual(terminal(events), { kind: 'turn.completed', final_text: 'It is not there.', usage })
  assert.deepEqual(turn.usage, usage)
  assert.equal(provider.requests[0]?.body.stream, false)
  assert.equal(provider.requests[0]?.body.stream_options, undefined)
})

test('a provider that reports no usage leaves usage off the terminal event and the turn record, not zero', async (t) => {
  const g = await gateway(t)
  twoCalls(g, null, null)
  const { events, turn } = await runTurn(g, 'read missing.txt')

  assert.deepEqual(terminal(events), { kind: 'turn.completed', final_text: 'It is not there.' })
  assert.equal(turn.status, 'completed')
  assert.equal('usage' in turn, false)
})

test('when only some calls report usage the sums say how many did not', async (t) => {
  const g = await gateway(t)
  twoCalls(g, { prompt_tokens: 50, completion_tokens: 7 }, null)
  const { events, turn } = await runTurn(g, 'read missing.txt')

  const usage = { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57, reported_calls: 1, unreported_calls: 1, cost_usd: null }
  assert.deepEqual(terminal(events), { kind: 'turn.completed', final_text: 'It is not there.', usage })
  assert.deepEqual(turn.usage, usage)
})

test('a usage without both counts, or with a count that is not a non-negative integer, is no usage', async (t) => {
  const g = await gateway(t)
  const half = { prompt_tokens: 12 } as unknown as { prompt_tokens: number, completion_tokens: number }
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'file_read', arguments: { path: 'a.txt' } }], usage: half },
    { toolCalls: [{ id: 'c2', name: 'file_read', arguments: { path: 'b.txt' } }], usage: { prompt_tokens: 12, completion_tokens: -1 } },
    { toolCalls: [{ id: 'c3', name: 'file_read', arguments: { path: 'c.txt' } }], usage: { prompt_tokens: 1.5, completion_tokens: 2 } },
    { text: 'None of them.', usage: { prompt_tokens: 30, completion_tokens: 4 } }
  )
  const { events, turn } = await runTurn(g, 'read three files')

  const usage = { prompt_tokens: 30, completion_tokens: 4, total_tokens: 34, reported_calls: 1, unreported_calls: 3, cost_usd: null }
  assert.deepEqual(terminal(events), { kind: 'turn.completed', final_text: 'None of them.', usage })
  assert.deepEqual(turn.usage, usage)
})

test('stream_usage = false stops asking for usage; a turn without any then has none', async (t) => {
  const provider = await startFakeProvider()
  t.after(async () => { await provider.close() })
  const g = await gateway(t, { providers: { fake: { stream_usage: false } } }, provider)
  provider.enqueue({ text: 'hi', usage: null })
  const { events, turn } = await runTurn(g, 'hello')

  assert.equal(provider.requests[0]?.body.stream, true)
  assert.equal('stream_options' in (provider.requests[0]?.body ?? {}), false)
  assert.deepEqual(terminal(events), { kind: 'turn.completed', final_text: 'hi' })
  assert.equal('usage' in turn, false)
})

test('a turn that fails after an answered call carries that call\'s usage on turn.failed', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue(
    { toolCalls: READ_MISSING, usage: { prompt_tokens: 33, completion_tokens: 3 } },
    { status: 500 }
  )
  const { events, turn } = await runTurn(g, 'read missing.txt')

  const last = terminal(events)
  assert.equal(last.kind, 'turn.failed')
  assert.equal(last.kind === 'turn.failed' ? last.code : '', 'PROVIDER_ERROR')
  const usage = { prompt_tokens: 33, completion_tokens: 3, total_tokens: 36, reported_calls: 1, unreported_calls: 0, cost_usd: null }
  assert.deepEqual(last.kind === 'turn.failed' ? last.usage : null, usage)
  assert.equal(turn.status, 'failed')
  assert.deepEqual(turn.usage, usage)
})

test('a cancelled turn carries the usage of the calls answered before the cancel', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue(
    { toolCalls: READ_MISSING, usage: { prompt_tokens: 21, completion_tokens: 2 } },
    { hang: true }
  )
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'read missing.txt' })
  const turnId = accepted.turn_id as string
  await ws.waitForEvent(turnId, (e) => e.kind === 'iteration' && e.n === 2, 10_000)
  const del = await g.http('DELETE', `/v1/turns/${turnId}`)
  assert.equal(del.status, 200)
  const events = await ws.waitForTerminal(turnId, 10_000)

  const usage = { prompt_tokens: 21, completion_tokens: 2, total_tokens: 23, reported_calls: 1, unreported_calls: 0, cost_usd: null }
  const last = terminal(events)
  assert.equal(last.kind, 'turn.cancelled')
  assert.deepEqual(last.kind === 'turn.cancelled' ? last.usage : null, usage)
  assert.deepEqual((await g.http('GET', `/v1/turns/${turnId}`)).body.usage, usage)
})

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`a turn's usage survives a restart on the ${kind} store`, async (t) => {
    const defer = deferrer(t)
    const provider = await startFakeProvider()
    defer(async () => { await provider.close() })
    let store: Record<string, unknown>
    if (kind === 'sqlite') {
      const dir = await mkdtemp(join(tmpdir(), 'tollgate-usage-'))
      defer(async () => { await rm(dir, { recursive: true, force: true }) })
      store = { kind, sqlite: { path: join(dir, 'tollgate.db') } }
    } else {
      store = { kind, postgres: { url: PG_URL, schema: scratchSchema(defer) } }
    }
    const first = await startGateway({ provider, overrides: { store } })
    twoCalls(first, { prompt_tokens: 70, completion_tokens: 8 }, { prompt_tokens: 90, completion_tokens: 12 })
    const { turn } = await runTurn(first, 'read missing.txt')
    await first.close()

    const second = await startGateway({ provider, overrides: { store } })
    defer(async () => { await second.close() })
    const res = await second.http('GET', `/v1/turns/${turn.turn_id as string}`)
    assert.equal(res.status, 200)
    const usage = { prompt_tokens: 160, completion_tokens: 20, total_tokens: 180, reported_calls: 2, unreported_calls: 0, cost_usd: null }
    assert.deepEqual(res.body.usage, usage)
    const events = await second.http('GET', `/v1/turns/${turn.turn_id as string}/events`)
    assert.deepEqual(events.body.events.at(-1).event.usage, res.body.usage)
  })
}

test('a delegated sub-turn\'s model calls count in the parent turn\'s usage', async (t) => {
  const g = await gateway(t, { agents: { default: { tools: ['file_read', 'delegate'] } }, risk_profiles: { default: { level: 'full' } } })
  g.provider.enqueue(
    {
      toolCalls: [{ id: 'p1', name: 'delegate', arguments: { task: 'Say hi.', tools: ['file_read'] } }],
      usage: { prompt_tokens: 100, completion_tokens: 10 }
    },
    { text: 'hi', usage: { prompt_tokens: 20, completion_tokens: 2 } },
    { text: 'The sub-agent said hi.', usage: { prompt_tokens: 130, completion_tokens: 6 } }
  )
  const { events, turn } = await runTurn(g, 'delegate a greeting')

  const usage = { prompt_tokens: 250, completion_tokens: 18, total_tokens: 268, reported_calls: 3, unreported_calls: 0, cost_usd: null }
  assert.deepEqual(terminal(events), { kind: 'turn.completed', final_text: 'The sub-agent said hi.', usage })
  assert.deepEqual(turn.usage, usage)
})
