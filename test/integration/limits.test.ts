import { test } from 'node:test'
import assert from 'node:assert/strict'
import { WebSocket } from 'ws'
import type { RecordedRequest, ScriptedReply } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'
import { eventually } from '../helpers/eventually.js'

/** Two pings answered prove a socket (or client) was not affected by another one's breach. */
async function assertServed (g: TestGateway, token?: string): Promise<void> {
  const ws = await g.socket(token === undefined ? {} : { protocols: ['tollgate.v1', `bearer.${token}`] })
  assert.equal((await ws.request({ type: 'ping' })).type, 'pong')
  assert.equal((await ws.request({ type: 'ping' })).type, 'pong')
  ws.close()
}

test('a body over the HTTP limit is refused with 413 PAYLOAD_TOO_LARGE while other requests are served', async (t) => {
  const g = await startGateway({ overrides: { server: { body_limit_bytes: 2048 } } })
  t.after(() => g.close())
  g.provider.enqueue({ text: 'fine' })
  const [big, small] = await Promise.all([
    g.http('POST', '/v1/turns', { message: 'x'.repeat(4096) }),
    g.http('POST', '/v1/turns?wait=true', { message: 'small' })
  ])
  assert.equal(big.status, 413)
  assert.equal(big.body.code, 'PAYLOAD_TOO_LARGE')
  assert.equal(small.status, 200)
  assert.equal(small.body.final_text, 'fine')
})

test('a WebSocket frame over the payload limit closes that socket with 1009 and no other', async (t) => {
  const g = await startGateway({ overrides: { ws: { max_payload_bytes: 1024 } } })
  t.after(() => g.close())
  const bystander = await g.socket()
  const ws = await g.socket()
  ws.send({ type: 'hello', client: 'x'.repeat(2000) })
  assert.equal(await ws.closed(), 1009)
  assert.equal((await bystander.request({ type: 'ping' })).type, 'pong')
  await assertServed(g)
})

test('frames beyond the burst are answered with RATE_LIMITED and other sockets are not slowed', async (t) => {
  // A refill rate this low keeps the bucket empty for the whole test, whatever the machine's speed.
  const g = await startGateway({ overrides: { ws: { frame_rate: { per_second: 0.001, burst: 3, max_rejected: 100 } } } })
  t.after(() => g.close())
  const ws = await g.socket()
  for (let i = 0; i < 5; i++) ws.send({ type: 'ping', ref: `p${i}` })
  const answers = []
  for (let i = 0; i < 5; i++) answers.push(await ws.next((f) => f.ref === `p${i}`))
  assert.deepEqual(answers.map((f) => f.type === 'error' ? f.code : f.type), ['pong', 'pong', 'pong', 'RATE_LIMITED', 'RATE_LIMITED'])
  assert.equal(ws.closeCode, null)
  await assertServed(g)
})

test('a socket that keeps sending after being rate limited is closed with 1008 and others stay open', async (t) => {
  const g = await startGateway({ overrides: { ws: { frame_rate: { per_second: 0.001, burst: 2, max_rejected: 3 } } } })
  t.after(() => g.close())
  const bystander = await g.socket()
  const ws = await g.socket()
  for (let i = 0; i < 10; i++) ws.send({ type: 'ping', ref: `p${i}` })
  assert.equal(await ws.closed(), 1008)
  assert.equal(ws.closeReason, 'frame rate limit exceeded')
  assert.deepEqual(ws.frames.map((f) => f.type === 'error' ? f.code : f.type), ['pong', 'pong', 'RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED'])
  assert.equal((await bystander.request({ type: 'ping' })).type, 'pong')
})

/** Each request gets a slow probe call first, then a final answer once the tool result is back. */
function slowTurnScript (request: RecordedRequest): ScriptedReply {
  const last = request.body.messages.at(-1)
  if (last?.role === 'tool') return { text: 'done' }
  return { toolCalls: [{ id: 'c1', name: 'probe', arguments: { label: 'slow', ms: 60_000 } }] }
}

test('a principal over its concurrent-turn cap gets 429 TOO_MANY_TURNS while another principal starts turns', async (t) => {
  const probes = createProbes()
  const g = await startGateway({
    tools: probes.tools, overrides: probeOverrides({ ...jwtAuth(), turns: { max_active_turns_per_principal: 2 } })
  })
  t.after(() => g.close())
  for (let i = 0; i < 6; i++) g.provider.enqueue(slowTurnScript)
  const alice = bearer(await mintToken({ sub: 'alice' }))
  const bob = bearer(await mintToken({ sub: 'bob' }))

  const first = await g.http('POST', '/v1/turns', { message: 'one', detach: true }, alice)
  const second = await g.http('POST', '/v1/turns', { message: 'two', detach: true }, alice)
  assert.deepEqual([first.status, second.status], [202, 202])
  const third = await g.http('POST', '/v1/turns', { message: 'three', detach: true }, alice)
  assert.equal(third.status, 429)
  assert.equal(third.body.code, 'TOO_MANY_TURNS')
  const aliceSocket = await g.socket({ protocols: ['tollgate.v1', `bearer.${await mintToken({ sub: 'alice' })}`] })
  const refused = await aliceSocket.request({ type: 'turn.start', message: 'four' })
  assert.deepEqual([refused.type, refused.code], ['error', 'TOO_MANY_TURNS'])

  const other = await g.http('POST', '/v1/turns', { message: 'bob', detach: true }, bob)
  assert.equal(other.status, 202)

  const cancelled = await g.http('DELETE', `/v1/turns/${first.body.turn_id as string}`, undefined, alice)
  assert.equal(cancelled.body.status, 'cancelled')
  const again = await g.http('POST', '/v1/turns', { message: 'five', detach: true }, alice)
  assert.equal(again.status, 202)
})

test('a socket over its subscription cap gets TOO_MANY_SUBSCRIPTIONS while another socket subscribes', async (t) => {
  const g = await startGateway({ overrides: { ws: { max_subscriptions: 2 } } })
  t.after(() => g.close())
  const sessions: string[] = []
  for (let i = 0; i < 3; i++) {
    g.provider.enqueue({ text: `answer ${i}` })
    sessions.push((await g.http('POST', '/v1/turns?wait=true', { message: `q${i}` })).body.session_id as string)
  }
  const ws = await g.socket()
  assert.equal((await ws.request({ type: 'subscribe', session_id: sessions[0] })).type, 'subscribed')
  assert.equal((await ws.request({ type: 'subscribe', session_id: sessions[1] })).type, 'subscribed')
  const over = await ws.request({ type: 'subscribe', session_id: sessions[2] })
  assert.deepEqual([over.type, over.code], ['error', 'TOO_MANY_SUBSCRIPTIONS'])
  const other = await g.socket()
  assert.equal((await other.request({ type: 'subscribe', session_id: sessions[2] })).type, 'subscribed')
  // Freeing a slot makes room again on the same socket.
  await ws.request({ type: 'unsubscribe', session_id: sessions[0] })
  assert.equal((await ws.request({ type: 'subscribe', session_id: sessions[2] })).type, 'subscribed')
})

test('a consumer that stops reading is closed with 1008 once its unsent bytes pass the bound, and others get every event', async (t) => {
  const probes = createProbes()
  const g = await startGateway({
    tools: probes.tools,
    overrides: probeOverrides({ ws: { max_buffered_bytes: 65_536, frame_rate: { burst: 10_000, per_second: 10_000 } } })
  })
  t.after(() => g.close())
  // One finished turn with ~300 KiB of events: every replay of it is that much output.
  const calls = Array.from({ length: 10 }, (_, i) => ({ id: `c${i}`, name: 'probe', arguments: { label: `l${i}`, output: `${i}:${'x'.repeat(15_000)}` } }))
  g.provider.enqueue({ toolCalls: calls }, { text: 'done' })
  const turn = (await g.http('POST', '/v1/turns?wait=true', { message: 'go' })).body
  assert.equal(turn.status, 'completed')

  const slow = await g.socket()
  slow.ws.pause()
  const serverSide = (): WebSocket[] => [...g.gateway.app.websocketServer.clients]
  const closing = (): boolean => serverSide().some((s) => s.readyState === WebSocket.CLOSING || s.readyState === WebSocket.CLOSED)
  // Kernel socket buffers absorb a few MiB first; keep asking for replays until the gateway gives up.
  await eventually(() => {
    if (!closing()) slow.send({ type: 'subscribe', turn_id: turn.turn_id })
    return closing()
  }, { what: 'the gateway to close the slow consumer', timeoutMs: 20_000 })

  const healthy = await g.socket()
  const subscribed = await healthy.request({ type: 'subscribe', turn_id: turn.turn_id })
  assert.equal(subscribed.type, 'subscribed')
  const events = await healthy.waitForTerminal(turn.turn_id)
  assert.equal(events.length, subscribed.last_seq)

  slow.ws.resume()
  assert.equal(await slow.closed(30_000), 1008)
  assert.equal(slow.closeReason, 'slow consumer: too many unsent bytes')
})

test('an SSE reader that stops reading loses its stream once its unsent bytes pass the bound, and the turn it owned is cancelled', async (t) => {
  const probes = createProbes()
  const g = await startGateway({
    tools: probes.tools,
    overrides: probeOverrides({
      ws: { max_buffered_bytes: 65_536 }, turns: { max_event_output_bytes: 65_536 },
      runtime_profiles: { default: { max_tool_iterations: 20, loop_detection: { enabled: false } } }
    })
  })
  t.after(() => g.close())
  let round = 0
  const bigRound = (): ScriptedReply => {
    round++
    return { toolCalls: Array.from({ length: 20 }, (_, i) => ({ id: `c${round}_${i}`, name: 'probe', arguments: { label: `r${round}i${i}`, output: `r${round}i${i}:${'y'.repeat(60_000)}` } })) }
  }
  g.provider.enqueue(...Array.from({ length: 21 }, () => bigRound))
  const { request } = await import('node:http')
  const turnId = await new Promise<string>((resolve, reject) => {
    const req = request(new URL('/v1/turns', g.url), { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' } }, (res) => {
      res.pause()
      resolve(String(res.headers['x-turn-id']))
    })
    req.on('error', () => {})
    req.end(JSON.stringify({ message: 'flood me' }))
    t.after(() => { req.destroy() })
    setTimeout(() => reject(new Error('no SSE response')), 5000)
  })
  let status = 'running'
  await eventually(async () => (status = (await g.http('GET', `/v1/turns/${turnId}`)).body.status) !== 'running', { what: 'the flooded turn to end' })
  assert.equal(status, 'cancelled')
  await assertServed(g)
})
