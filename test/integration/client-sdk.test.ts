import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { ClientNotice, EventEnvelope, TollgateClient } from '@tollgate/client'
import { createNodeClient, type ApprovalAnswerResult, type TurnEvent } from '@tollgate/client/node'
import { shape, startGateway, type TestGateway } from '../helpers/gateway.js'
import { startDropperGateway, type SocketDropper } from '../helpers/socket-drop.js'
import { jwtAuth, mintToken } from '../helpers/tokens.js'
import { eventually } from '../helpers/eventually.js'

interface Setup { g: TestGateway, client: TollgateClient, dropper: SocketDropper, notices: ClientNotice[] }

async function setup (t: { after: (fn: () => Promise<void>) => void }, extra: Record<string, unknown> = {}): Promise<Setup> {
  const { g, dropper } = await startDropperGateway(extra)
  const client = createNodeClient({ url: g.url, reconnect: { initialDelayMs: 20, maxDelayMs: 100 } })
  const notices: ClientNotice[] = []
  client.on((n) => { notices.push(n) })
  t.after(async () => {
    client.close()
    await g.close()
  })
  return { g, client, dropper, notices }
}

async function collect (stream: AsyncIterable<EventEnvelope>): Promise<EventEnvelope[]> {
  const out: EventEnvelope[] = []
  for await (const e of stream) out.push(e)
  return out
}

async function serverEvents (g: TestGateway, turnId: string): Promise<EventEnvelope[]> {
  return (await g.http('GET', `/v1/turns/${turnId}/events`)).body.events
}

test('a turn started with the client streams every event in seq order and ends at the terminal event', async (t) => {
  const { g, client } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'one' } }] }, { text: 'all done' })
  const stream = await client.startTurn({ message: 'go' })
  const events = await collect(stream)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:probe', 'tool_result:probe:ok', 'iteration', 'turn.completed'])
  assert.deepEqual(events.map((e) => e.seq), events.map((_e, i) => i + 1))
  assert.deepEqual(events, await serverEvents(g, stream.turnId))
  assert.equal(stream.sessionId, (await client.getTurn(stream.turnId)).session_id)
})

test('the client answers an approval request and the approved tool runs', async (t) => {
  const { g, client } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'r' } }] }, { text: 'ok' })
  const stream = await client.startTurn({ message: 'go' })
  const seen: string[] = []
  for await (const e of stream) {
    seen.push(e.event.kind)
    if (e.event.kind === 'approval.requested') {
      const ack = await client.respond(e.event.request_id, 'yes')
      assert.deepEqual([ack.type, ack.decision, ack.turn_id], ['approval.accepted', 'yes', stream.turnId])
    }
  }
  const turn = await client.getTurn(stream.turnId)
  assert.equal(turn.status, 'completed')
  assert.deepEqual(turn.tool_calls.map((c) => [c.name, c.status, c.output]), [['risky', 'ok', 'done r']])
  assert.ok(seen.includes('approval.resolved'))
})

test('answerApproval answers over HTTP with the typed result, and the Node entry point exports the wire types', async (t) => {
  const { g, client } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'h' } }] }, { text: 'ok' })
  const stream = await client.startTurn({ message: 'go' })
  const kinds: Array<TurnEvent['kind']> = []
  let answer: ApprovalAnswerResult | undefined
  for await (const { event } of stream) {
    kinds.push(event.kind)
    if (event.kind === 'approval.requested') answer = await client.answerApproval(event.request_id, 'yes')
  }
  const requestId = (await client.getTurn(stream.turnId)).approvals[0]?.request_id
  assert.deepEqual(answer, { request_id: requestId, turn_id: stream.turnId, decision: 'yes' })
  assert.equal(kinds.at(-1), 'turn.completed')
})

test('an edit answer needs a replacement text before anything is sent', async (t) => {
  const { client } = await setup(t)
  await assert.rejects(client.respond('apr_x', 'edit'), { code: 'INVALID_DECISION' })
})

test('a gateway error answering a frame rejects that request with the gateway code', async (t) => {
  const { client } = await setup(t)
  await assert.rejects(client.respond('apr_missing', 'yes'), { name: 'TollgateClientError', code: 'APPROVAL_NOT_FOUND' })
  await assert.rejects(client.cancel('turn_missing'), { code: 'TURN_NOT_FOUND' })
})

test('cancel ends a running turn with turn.cancelled once the turn has recorded it', async (t) => {
  const { g, client } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'slow', ms: 10_000 } }] })
  const stream = await client.startTurn({ message: 'go' })
  for await (const e of stream) {
    if (e.event.kind === 'tool_call') {
      const ack = await client.cancel(stream.turnId)
      assert.equal(ack.status, 'cancelled')
    }
  }
  const terminal = await stream.done()
  assert.equal(terminal.event.kind, 'turn.cancelled')
  assert.deepEqual(shape(stream.events), shape(await serverEvents(g, stream.turnId)))
})

test('after the socket drops mid-turn the client reconnects, resumes after the last seq and holds every event exactly once', async (t) => {
  const { g, client, dropper, notices } = await setup(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'a', name: 'drop_sockets', arguments: {} }] },
    { toolCalls: [{ id: 'b', name: 'probe', arguments: { label: 'after' } }] },
    { text: 'finished after the drop', chunkDelayMs: 5 }
  )
  const stream = await client.startTurn({ message: 'go', detach: true })
  const events = await collect(stream)
  assert.equal(dropper.dropped(), 1)
  assert.deepEqual(events, await serverEvents(g, stream.turnId), 'the same events, each once, in order')
  assert.equal(events.at(-1)?.event.kind, 'turn.completed')
  const resumed = notices.find((n) => n.type === 'subscribed' && n.resumed)
  assert.ok(resumed !== undefined && resumed.type === 'subscribed', 'the turn was resubscribed')
  const dropCall = events.find((e) => e.event.kind === 'tool_call' && e.event.name === 'drop_sockets')
  assert.equal(resumed.afterSeq, dropCall?.seq, 'resumed right after the last event seen before the drop')
  assert.ok(resumed.serverLastSeq > resumed.afterSeq, 'events were published while the client was away')
  assert.ok(notices.some((n) => n.type === 'state' && n.state === 'reconnecting'))
})

test('an owned turn whose socket drops is cancelled by default, and the resumed stream shows the cancellation', async (t) => {
  const { g, client } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'drop_sockets', arguments: {} }] }, { text: 'never' })
  const stream = await client.startTurn({ message: 'go' })
  const events = await collect(stream)
  assert.equal(events.at(-1)?.event.kind, 'turn.cancelled')
  assert.deepEqual(events, await serverEvents(g, stream.turnId))
})

test('subscribing to a turn of nobody fails that stream with TURN_NOT_FOUND', async (t) => {
  const { client } = await setup(t)
  await client.connect()
  const stream = client.subscribe('turn_nobody')
  await assert.rejects(stream.done(), { code: 'TURN_NOT_FOUND' })
  await assert.rejects(collect(stream), { code: 'TURN_NOT_FOUND' })
})

test('subscribing with after_seq replays only the later events of a finished turn', async (t) => {
  const { g, client } = await setup(t)
  g.provider.enqueue({ text: 'short' })
  const started = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  const stream = client.subscribe(started.body.turn_id, { afterSeq: 2 })
  const events = await collect(stream)
  assert.deepEqual(events, (await serverEvents(g, started.body.turn_id)).filter((e) => e.seq > 2))
})

test('the client gives up after maxAttempts failed connections and rejects what waits on it', async () => {
  const client = createNodeClient({ url: 'http://127.0.0.1:9', reconnect: { initialDelayMs: 5, maxDelayMs: 10, maxAttempts: 2 } })
  const states: string[] = []
  client.on((n) => { if (n.type === 'state') states.push(n.state) })
  const stream = client.subscribe('turn_x')
  await assert.rejects(client.connect(), { code: 'CONNECT_FAILED' })
  await assert.rejects(stream.done(), { code: 'CONNECT_FAILED' })
  assert.equal(client.state, 'closed')
  assert.deepEqual(states, ['connecting', 'reconnecting', 'reconnecting', 'closed'])
})

test('with auth.mode jwt the client authenticates with its token over WebSocket and HTTP, and without one it cannot connect', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(async () => { await g.close() })
  g.provider.enqueue({ text: 'hello alice' })
  const client = createNodeClient({ url: g.url, token: await mintToken({ sub: 'alice' }) })
  t.after(() => { client.close() })
  const stream = await client.startTurn({ message: 'hi' })
  assert.equal((await stream.done()).event.kind, 'turn.completed')
  assert.equal((await client.getTurn(stream.turnId)).final_text, 'hello alice')

  const anonymous = createNodeClient({ url: g.url, reconnect: { initialDelayMs: 5, maxDelayMs: 10, maxAttempts: 1 } })
  await assert.rejects(anonymous.connect(), { code: 'CONNECT_FAILED' })
  await assert.rejects(anonymous.getTurn(stream.turnId), { status: 401 })
})

test('setting a token on a client that gave up connecting reconnects with it', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(async () => { await g.close() })
  const client = createNodeClient({ url: g.url, reconnect: { initialDelayMs: 5, maxDelayMs: 10, maxAttempts: 1 } })
  t.after(() => { client.close() })
  await assert.rejects(client.connect(), { code: 'CONNECT_FAILED' })
  client.setToken(await mintToken())
  await eventually(() => client.state === 'open', { what: 'the client to reconnect with its new token' })
})
