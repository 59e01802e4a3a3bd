import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { shape, type TestGateway } from '../helpers/gateway.js'
import { startProbeGateway } from '../helpers/tools.js'
import { eventually } from '../helpers/eventually.js'

const slow = { toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'slow', ms: 10_000 } }] }

async function statusOf (g: TestGateway, turnId: string): Promise<string> {
  return (await g.http('GET', `/v1/turns/${turnId}`)).body.status
}

test('closing the owner socket cancels its turn and the running tool is interrupted', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue(slow)
  const owner = await g.socket()
  const { turn_id: turnId } = await owner.request({ type: 'turn.start', message: 'go' })
  await owner.waitForEvent(turnId, (e) => e.kind === 'tool_call')
  owner.close()
  await eventually(async () => await statusOf(g, turnId) === 'cancelled', { what: 'the turn to be cancelled' })
  const events = (await g.http('GET', `/v1/turns/${turnId}/events`)).body.events
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:probe', 'tool_result:probe:interrupted', 'turn.cancelled'])
  assert.equal(events.at(-1).event.reason, 'owner connection closed')
  assert.deepEqual(probes.runs.map((r) => r.aborted), [true], 'the tool saw its abort signal')
})

test('closing the owner socket while the model is answering aborts the provider request', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ hang: true })
  const owner = await g.socket()
  const { turn_id: turnId } = await owner.request({ type: 'turn.start', message: 'go' })
  await eventually(() => g.provider.open() === 1, { what: 'the provider request' })
  owner.close()
  await eventually(() => g.provider.open() === 0, { what: 'the provider request to be aborted' })
  await eventually(async () => await statusOf(g, turnId) === 'cancelled', { what: 'the turn to be cancelled' })
})

test('a detached turn keeps running after its owner socket closes', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'x', ms: 200 } }] }, { text: 'done' })
  const owner = await g.socket()
  const { turn_id: turnId } = await owner.request({ type: 'turn.start', message: 'go', detach: true })
  owner.close()
  await eventually(async () => await statusOf(g, turnId) === 'completed', { what: 'the turn to complete' })
})

test('disconnect_grace_ms gives the owner time to come back before cancelling', async (t) => {
  const { g } = await startProbeGateway(t, { turns: { disconnect_grace_ms: 300 } })
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'x', ms: 100 } }] }, { text: 'done' }, slow)
  const owner = await g.socket()
  const quick = await owner.request({ type: 'turn.start', message: 'go', session_id: 'grace-1' })
  owner.close()
  await eventually(async () => await statusOf(g, quick.turn_id) === 'completed', { what: 'a turn that ends within the grace period to complete' })

  const second = await g.socket()
  const { turn_id: turnId } = await second.request({ type: 'turn.start', message: 'again' })
  await second.waitForEvent(turnId, (e) => e.kind === 'tool_call')
  second.close()
  assert.equal(await statusOf(g, turnId), 'running', 'still running inside the grace period')
  await eventually(async () => await statusOf(g, turnId) === 'cancelled', { what: 'the turn to be cancelled after the grace period' })
})

test('an owner that reconnects and resumes within disconnect_grace_ms keeps its turn and becomes its owner again', async (t) => {
  const { g, probes } = await startProbeGateway(t, { turns: { disconnect_grace_ms: 300 } })
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'long', ms: 1200 } }] }, { text: 'done' })
  const first = await g.socket()
  const { turn_id: turnId } = await first.request({ type: 'turn.start', message: 'go' })
  const seen = await first.waitForEvent(turnId, (e) => e.kind === 'tool_call')
  first.close()
  const again = await g.socket()
  await again.request({ type: 'subscribe', turn_id: turnId, after_seq: seen.seq })
  const events = await again.waitForTerminal(turnId, 10_000)
  assert.equal(events.at(-1)?.event.kind, 'turn.completed', 'the grace ran out while the resumed socket followed the turn')
  assert.equal(events[0]?.seq, seen.seq + 1, 'resumed right after the last event seen')
  assert.deepEqual(probes.runs.map((r) => r.finished), [true])

  g.provider.enqueue({ toolCalls: [{ id: 'b', name: 'probe', arguments: { label: 'next', ms: 10_000 } }] })
  const { turn_id: second } = await again.request({ type: 'turn.start', message: 'again', detach: false })
  await again.waitForEvent(second, (e) => e.kind === 'tool_call')
  again.close()
  await eventually(async () => await statusOf(g, second) === 'cancelled', { what: 'a turn whose owner does not come back to be cancelled' })
})

test('after the grace, a resumed socket is the owner: closing it cancels the turn', async (t) => {
  const { g } = await startProbeGateway(t, { turns: { disconnect_grace_ms: 200 } })
  g.provider.enqueue(slow)
  const first = await g.socket()
  const { turn_id: turnId } = await first.request({ type: 'turn.start', message: 'go' })
  await first.waitForEvent(turnId, (e) => e.kind === 'tool_call')
  first.close()
  const again = await g.socket()
  await again.request({ type: 'subscribe', turn_id: turnId })
  // fixed wait: a negative check past the 200 ms grace: only an adopted owner keeps the turn running this long.
  await new Promise((resolve) => setTimeout(resolve, 400))
  assert.equal(await statusOf(g, turnId), 'running')
  again.close()
  await eventually(async () => await statusOf(g, turnId) === 'cancelled', { what: 'the adopted owner closing to cancel the turn' })
})

test('closing an SSE request cancels the turn it started', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue(slow)
  const url = new URL('/v1/turns', g.url)
  let turnId = ''
  await new Promise<void>((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' } }, (res) => {
      assert.equal(res.statusCode, 200)
      assert.match(String(res.headers['content-type']), /text\/event-stream/)
      turnId = String(res.headers['x-turn-id'])
      let buffer = ''
      res.on('data', (chunk: Buffer) => {
        buffer += chunk.toString('utf8')
        if (buffer.includes('event: tool_call')) {
          req.destroy()
          resolve()
        }
      })
      res.on('error', () => {})
    })
    req.on('error', () => {})
    req.on('close', () => resolve())
    req.end(JSON.stringify({ message: 'go' }))
    setTimeout(() => reject(new Error('no tool_call on the SSE stream')), 5000)
  })
  await eventually(async () => await statusOf(g, turnId) === 'cancelled', { what: 'the SSE-owned turn to be cancelled' })
})

test('closing a ?wait=true request cancels the turn it started', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue(slow)
  const controller = new AbortController()
  const pending = fetch(`${g.url}/v1/turns?wait=true`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'go', session_id: 'wait-close' }), signal: controller.signal }).catch(() => null)
  await eventually(async () => (await g.http('GET', '/v1/sessions/wait-close')).status === 200, { what: 'the session to exist' })
  const session = await g.http('GET', '/v1/sessions/wait-close')
  const turnId = session.body.turn_ids[0] as string
  await eventually(async () => (await g.http('GET', `/v1/turns/${turnId}`)).body.tool_calls.length === 0 && (await g.http('GET', `/v1/turns/${turnId}/events`)).body.events.some((e: { event: { kind: string } }) => e.event.kind === 'tool_call'), { what: 'the tool to start' })
  controller.abort()
  await pending
  await eventually(async () => await statusOf(g, turnId) === 'cancelled', { what: 'the long-polled turn to be cancelled' })
})

test('DELETE cancels a running turn and answers with its final status', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue(slow)
  const started = await g.http('POST', '/v1/turns', { message: 'go' })
  await eventually(async () => (await g.http('GET', `/v1/turns/${started.body.turn_id}/events`)).body.events.some((e: { event: { kind: string } }) => e.event.kind === 'tool_call'), { what: 'the tool to start' })
  const res = await g.http('DELETE', `/v1/turns/${started.body.turn_id}`)
  assert.deepEqual([res.status, res.body], [200, { turn_id: started.body.turn_id, status: 'cancelled' }])
  const again = await g.http('DELETE', `/v1/turns/${started.body.turn_id}`)
  assert.deepEqual([again.status, again.body.status], [200, 'cancelled'], 'cancelling twice is harmless')
})

test('cancelled turns keep their history: the user message and the interrupted round reach the session', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue(slow, { text: 'next turn answer' })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'first question', session_id: 'keep-history' })
  await ws.waitForEvent(turnId, (e) => e.kind === 'tool_call')
  await ws.request({ type: 'cancel', turn_id: turnId })
  const session = await g.http('GET', '/v1/sessions/keep-history')
  assert.deepEqual(session.body.history.map((m: { role: string }) => m.role), ['user', 'assistant', 'tool'])
  assert.equal(session.body.history[2].content, '[interrupted by user before this tool produced a result]')
  const next = await ws.request({ type: 'turn.start', message: 'second question', session_id: 'keep-history' })
  await ws.waitForTerminal(next.turn_id)
  assert.deepEqual(g.provider.requests[1]?.body.messages.map((m) => m.role), ['system', 'user', 'assistant', 'tool', 'user'])
})

test('a turn longer than turn_timeout_ms fails with TURN_TIMEOUT', async (t) => {
  const { g } = await startProbeGateway(t, { turns: { turn_timeout_ms: 300 } })
  g.provider.enqueue(slow)
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.equal(res.body.status, 'failed')
  assert.equal(res.body.error.code, 'TURN_TIMEOUT')
  assert.equal(res.body.tool_calls[0].status, 'interrupted')
})

test('shutting the gateway down cancels running turns cleanly and closes sockets with 1001', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue(slow)
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go', detach: true })
  await ws.waitForEvent(turnId, (e) => e.kind === 'tool_call')
  const closing = g.gateway.close()
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events).slice(-2), ['tool_result:probe:interrupted', 'turn.cancelled'])
  const last = events.at(-1)?.event
  assert.ok(last?.kind === 'turn.cancelled' && last.reason === 'server shutting down')
  assert.equal(await ws.closed(), 1001)
  await closing
})
