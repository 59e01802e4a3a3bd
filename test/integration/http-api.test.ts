import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startGateway, shape, assertSeqContiguous, type TestGateway } from '../helpers/gateway.js'
import { finishedTurn, gate, runTurn, startTurn, turnEvents } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'
import type { EventEnvelope } from '../../schemas/events.js'

const READ_THEN_ANSWER = [
  { text: 'Let me read it.', toolCalls: [{ id: 'c1', name: 'file_read', arguments: { path: 'hello.txt' } }] },
  { text: 'The file says hi there.' }
]

async function withHello (t: { after: (fn: () => Promise<void>) => void }, overrides?: unknown): Promise<TestGateway> {
  const g = await startGateway(overrides === undefined ? {} : { overrides })
  t.after(() => g.close())
  await writeFile(join(g.workspace, 'hello.txt'), 'hi there')
  return g
}

function assertProblem (res: { status: number, body: any, headers: Headers }, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body))
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/)
  assert.equal(res.body.status, status)
  assert.equal(res.body.code, code)
  assert.equal(typeof res.body.type, 'string')
  assert.equal(typeof res.body.title, 'string')
}

test('POST /v1/turns answers 202 with the turn id, session id, running status and events URL', async (t) => {
  const g = await withHello(t)
  const hold = gate()
  g.provider.enqueue({ text: 'done', gate: hold.promise })
  const res = await g.http('POST', '/v1/turns', { message: 'hello' })
  assert.equal(res.status, 202)
  assert.deepEqual(Object.keys(res.body).sort(), ['events_url', 'session_id', 'status', 'turn_id'])
  assert.equal(res.body.status, 'running')
  assert.match(res.body.turn_id, /^turn_/)
  assert.match(res.body.session_id, /^ses_/)
  assert.equal(res.body.events_url, `/v1/turns/${res.body.turn_id}/events`)
  hold.open()
  assert.equal((await finishedTurn(g, res.body.turn_id)).status, 'completed')
})

test('schema-invalid turn requests are refused with 400 INVALID_REQUEST problem JSON and start nothing', async (t) => {
  const g = await withHello(t)
  const cases: Array<[string, unknown]> = [
    ['a missing message', { session_id: 's1' }],
    ['an empty message', { message: '' }],
    ['an extra property', { message: 'hi', colour: 'blue' }],
    ['a message that is not a string', { message: 42 }],
    ['an interactive flag that is not a boolean', { message: 'hi', interactive: 'yes' }],
    ['tools.allow that is not an array', { message: 'hi', tools: { allow: 'file_read' } }],
    ['a message over 100000 characters', { message: 'x'.repeat(100_001) }],
    ['a session_id outside the allowed pattern', { message: 'hi', session_id: 'has spaces/and slashes' }]
  ]
  for (const [name, body] of cases) {
    await t.test(name, async () => {
      const res = await g.http('POST', '/v1/turns', body)
      assertProblem(res, 400, 'INVALID_REQUEST')
      assert.equal(typeof res.body.detail, 'string')
      assert.notEqual(res.body.detail, '')
    })
  }
  assert.equal(g.provider.requests.length, 0)
})

test('a body that is not JSON is refused with 400 INVALID_JSON', async (t) => {
  const g = await withHello(t)
  const res = await g.http('POST', '/v1/turns', '{"message": "hi"', { 'content-type': 'application/json' })
  assertProblem(res, 400, 'INVALID_JSON')
})

test('a body of another content-type is refused with 415 UNSUPPORTED_MEDIA_TYPE', async (t) => {
  const g = await withHello(t)
  const res = await g.http('POST', '/v1/turns', 'message=hi', { 'content-type': 'application/x-www-form-urlencoded' })
  assertProblem(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
})

test('a body over server.body_limit_bytes is refused with 413 PAYLOAD_TOO_LARGE', async (t) => {
  const g = await withHello(t, { server: { body_limit_bytes: 2048 } })
  const res = await g.http('POST', '/v1/turns', { message: 'x'.repeat(4096) })
  assertProblem(res, 413, 'PAYLOAD_TOO_LARGE')
  assert.equal(g.provider.requests.length, 0)
})

test('a turn for an unknown agent is refused with 400 UNKNOWN_AGENT', async (t) => {
  const g = await withHello(t)
  const res = await g.http('POST', '/v1/turns', { message: 'hi', agent: 'nobody' })
  assertProblem(res, 400, 'UNKNOWN_AGENT')
})

/** Names every plain object inherits: a lookup by a client-chosen name must not find them. */
const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__']

test('an agent named after an Object.prototype member is unknown on POST /v1/turns, WS turn.start and GET /v1/tools', async (t) => {
  const g = await withHello(t)
  const ws = await g.socket()
  for (const agent of PROTOTYPE_NAMES) {
    assertProblem(await g.http('POST', '/v1/turns', { message: 'hi', agent }), 400, 'UNKNOWN_AGENT')
    const answer = await ws.request({ type: 'turn.start', message: 'hi', agent })
    assert.deepEqual([answer.type, answer.code], ['error', 'UNKNOWN_AGENT'], agent)
    assertProblem(await g.http('GET', `/v1/tools?agent=${agent}`), 400, 'UNKNOWN_AGENT')
  }
  assert.equal(g.provider.requests.length, 0)
})

test('tools.allow naming a tool the agent lacks is refused with 400 UNKNOWN_TOOL', async (t) => {
  const g = await withHello(t, { agents: { default: { provider: 'fake', tools: ['file_read'] } } })
  const res = await g.http('POST', '/v1/turns', { message: 'hi', tools: { allow: ['file_read', 'shell'] } })
  assertProblem(res, 400, 'UNKNOWN_TOOL')
  assert.match(res.body.detail, /shell/)
  assert.equal(g.provider.requests.length, 0)
})

test('GET of an unknown turn answers 404 TURN_NOT_FOUND', async (t) => {
  const g = await withHello(t)
  assertProblem(await g.http('GET', '/v1/turns/turn_does-not-exist'), 404, 'TURN_NOT_FOUND')
})

test('GET of a running turn shows it running with the tool calls made so far', async (t) => {
  const g = await withHello(t)
  const hold = gate()
  g.provider.enqueue(READ_THEN_ANSWER[0] as object, { ...READ_THEN_ANSWER[1], gate: hold.promise })
  const { turn_id: turnId } = await startTurn(g, { message: 'read hello.txt' })
  await eventually(() => g.provider.requests.length === 2, { what: 'the second provider request' })
  const running = await g.http('GET', `/v1/turns/${turnId}`)
  assert.equal(running.status, 200)
  assert.equal(running.body.status, 'running')
  assert.equal(running.body.iterations, 2)
  assert.equal(running.body.final_text, undefined)
  assert.deepEqual(running.body.tool_calls.map((c: any) => [c.name, c.status, c.output]), [['file_read', 'ok', 'hi there']])
  hold.open()
  await finishedTurn(g, turnId)
})

test('GET of a finished turn holds its tool call records, iterations, final text and last seq', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue(...READ_THEN_ANSWER)
  const { turn, events } = await runTurn(g, { message: 'read hello.txt' })
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, 'The file says hi there.')
  assert.equal(turn.iterations, 2)
  assert.equal(turn.last_seq, events.length)
  assert.equal(turn.tool_calls.length, 1)
  const [call] = turn.tool_calls
  assert.equal(call.name, 'file_read')
  assert.deepEqual(call.arguments, { path: 'hello.txt' })
  assert.equal(call.provider_call_id, 'c1')
  assert.equal(call.iteration, 1)
  assert.equal(call.status, 'ok')
  assert.equal(call.success, true)
  assert.equal(call.output, 'hi there')
  assert.equal(typeof call.duration_ms, 'number')
  assert.equal(turn.owner, undefined)
  const result = events.find((e) => e.event.kind === 'tool_result')
  assert.equal(result?.event.kind === 'tool_result' && result.event.call_id, call.call_id)
})

test('GET /v1/turns/:id/events?after_seq=N returns exactly the events after N', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue(...READ_THEN_ANSWER)
  const { turn, events } = await runTurn(g, { message: 'read hello.txt' })
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:file_read', 'tool_result:file_read:ok', 'iteration', 'turn.completed'])
  const after = await turnEvents(g, turn.turn_id, 3)
  assert.deepEqual(after.map((e) => e.seq), events.filter((e) => e.seq > 3).map((e) => e.seq))
  assert.deepEqual(after, events.slice(3))
  assert.equal((after[0] as EventEnvelope).seq, 4)
})

test('GET /v1/turns/:id/events with after_seq at or beyond the last seq returns no events', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue({ text: 'hi' })
  const { turn } = await runTurn(g, { message: 'hello' })
  assert.deepEqual(await turnEvents(g, turn.turn_id, turn.last_seq), [])
  const beyond = await g.http('GET', `/v1/turns/${turn.turn_id}/events?after_seq=${turn.last_seq + 50}`)
  assert.equal(beyond.status, 200)
  assert.deepEqual(beyond.body, { turn_id: turn.turn_id, status: 'completed', events: [] })
})

test('GET /v1/turns/:id/events with an after_seq that is not a non-negative integer is refused with 400 INVALID_REQUEST', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue({ text: 'hi' })
  const { turn } = await runTurn(g, { message: 'hello' })
  assertProblem(await g.http('GET', `/v1/turns/${turn.turn_id}/events?after_seq=-1`), 400, 'INVALID_REQUEST')
  assertProblem(await g.http('GET', `/v1/turns/${turn.turn_id}/events?after_seq=three`), 400, 'INVALID_REQUEST')
})

test('GET /v1/turns/:id/events past the retained log answers 410 REPLAY_GAP; the retained tail is still served', async (t) => {
  const g = await withHello(t, { turns: { max_events_per_turn: 16 } })
  g.provider.enqueue({ text: 'a long answer that streams in many small pieces, '.repeat(4) })
  const turn = await finishedTurn(g, (await startTurn(g, { message: 'talk to me' })).turn_id)
  assert.ok(turn.last_seq > 16)
  assertProblem(await g.http('GET', `/v1/turns/${turn.turn_id}/events?after_seq=0`), 410, 'REPLAY_GAP')
  const tail = await turnEvents(g, turn.turn_id, turn.last_seq - 16)
  assert.deepEqual(tail.map((e) => e.seq), Array.from({ length: 16 }, (_, i) => turn.last_seq - 15 + i))
})

test('POST /v1/turns?wait=true answers 200 with the finished turn', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue(...READ_THEN_ANSWER)
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'read hello.txt' })
  assert.equal(res.status, 200)
  assert.equal(res.body.status, 'completed')
  assert.equal(res.body.final_text, 'The file says hi there.')
  assert.equal(res.body.tool_calls.length, 1)
  assert.deepEqual(res.body, (await g.http('GET', `/v1/turns/${res.body.turn_id}`)).body)
})

interface SseMessage { id: string, event: string, data: any }

function parseSse (raw: string): SseMessage[] {
  return raw.split('\n\n').filter((block) => block.trim() !== '').map((block) => {
    const fields: Record<string, string> = {}
    for (const line of block.split('\n')) {
      const colon = line.indexOf(':')
      fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '')
    }
    return { id: fields.id ?? '', event: fields.event ?? '', data: JSON.parse(fields.data ?? 'null') }
  })
}

test('Accept: text/event-stream streams the turn as SSE with id = seq and event = kind, ending after the terminal event', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue(...READ_THEN_ANSWER)
  const res = await fetch(`${g.url}/v1/turns`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ message: 'read hello.txt' })
  })
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/)
  const turnId = res.headers.get('x-turn-id')
  assert.ok(turnId !== null)
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let raw = ''
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    raw += decoder.decode(value, { stream: true })
  }
  const messages = parseSse(raw)
  const envelopes = messages.map((m) => m.data as EventEnvelope)
  assertSeqContiguous(envelopes)
  assert.deepEqual(shape(envelopes), ['turn.started', 'iteration', 'tool_call:file_read', 'tool_result:file_read:ok', 'iteration', 'turn.completed'])
  for (const m of messages) {
    assert.equal(m.id, String(m.data.seq))
    assert.equal(m.event, m.data.event.kind)
    assert.equal(m.data.turn_id, turnId)
  }
  assert.equal(messages.at(-1)?.event, 'turn.completed')
  assert.deepEqual(envelopes, await turnEvents(g, turnId))
})

test('an SSE request whose turn cannot start answers problem JSON instead of a stream', async (t) => {
  const g = await withHello(t)
  const res = await g.http('POST', '/v1/turns', { message: 'hi', agent: 'nobody' }, { accept: 'text/event-stream' })
  assertProblem(res, 400, 'UNKNOWN_AGENT')
  assert.equal(g.gateway.connections.count(), 0)
})

test('owner_connection combined with ?wait=true is refused with 400 INVALID_REQUEST', async (t) => {
  const g = await withHello(t)
  assertProblem(await g.http('POST', '/v1/turns?wait=true', { message: 'hi', owner_connection: 'ws_x' }), 400, 'INVALID_REQUEST')
  assert.equal(g.provider.requests.length, 0)
})

test('the same idempotency_key with the same body answers with the same turn', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue({ text: 'once' })
  const body = { message: 'hello', idempotency_key: 'idem-1' }
  const first = await startTurn(g, body)
  const second = await startTurn(g, body)
  assert.equal(second.turn_id, first.turn_id)
  assert.equal(second.session_id, first.session_id)
  await finishedTurn(g, first.turn_id)
  const third = await startTurn(g, body)
  assert.equal(third.turn_id, first.turn_id)
  assert.equal(third.status, 'completed')
  assert.equal(g.provider.requests.length, 1)
})

test('the same idempotency_key with a different body is refused with 409 IDEMPOTENCY_CONFLICT', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue({ text: 'once' })
  const first = await startTurn(g, { message: 'hello', idempotency_key: 'idem-2' })
  assertProblem(await g.http('POST', '/v1/turns', { message: 'something else', idempotency_key: 'idem-2' }), 409, 'IDEMPOTENCY_CONFLICT')
  await finishedTurn(g, first.turn_id)
  assert.equal(g.provider.requests.length, 1)
})

test('spelling out default values does not make a repeated idempotency_key a different request', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue({ text: 'once' })
  const first = await startTurn(g, { message: 'hello', idempotency_key: 'idem-3' })
  const second = await startTurn(g, { message: 'hello', idempotency_key: 'idem-3', interactive: true, detach: false })
  assert.equal(second.turn_id, first.turn_id)
  await finishedTurn(g, first.turn_id)
})

test('a second turn on a session whose turn is still running is refused with 409 SESSION_BUSY', async (t) => {
  const g = await withHello(t)
  const hold = gate()
  g.provider.enqueue({ text: 'first', gate: hold.promise })
  const first = await startTurn(g, { message: 'one', session_id: 'busy-session' })
  assertProblem(await g.http('POST', '/v1/turns', { message: 'two', session_id: 'busy-session' }), 409, 'SESSION_BUSY')
  hold.open()
  assert.equal((await finishedTurn(g, first.turn_id)).status, 'completed')
  const session = await g.http('GET', '/v1/sessions/busy-session')
  assert.deepEqual(session.body.turn_ids, [first.turn_id])
})

test('session history holds the user message, the assistant tool-call message, the tool result and the final answer in provider order', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue(...READ_THEN_ANSWER)
  const { turn } = await runTurn(g, { message: 'read hello.txt', session_id: 'hist-1' })
  const res = await g.http('GET', '/v1/sessions/hist-1')
  assert.equal(res.status, 200)
  assert.equal(res.body.session_id, 'hist-1')
  assert.equal(res.body.agent, 'default')
  assert.deepEqual(res.body.turn_ids, [turn.turn_id])
  assert.deepEqual(res.body.history, [
    { role: 'user', content: 'read hello.txt' },
    { role: 'assistant', content: 'Let me read it.', tool_calls: [{ id: 'c1', name: 'file_read', arguments: '{"path":"hello.txt"}' }] },
    { role: 'tool', tool_call_id: 'c1', content: 'hi there' },
    { role: 'assistant', content: 'The file says hi there.' }
  ])
})

test('a second turn in the same session sends the earlier history to the provider', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue(...READ_THEN_ANSWER, { text: 'You asked me to read hello.txt.' })
  await runTurn(g, { message: 'read hello.txt', session_id: 'hist-2' })
  const { turn } = await runTurn(g, { message: 'what did I ask?', session_id: 'hist-2' })
  assert.equal(turn.final_text, 'You asked me to read hello.txt.')
  const sent = g.provider.requests[2]?.body.messages ?? []
  assert.equal(sent[0]?.role, 'system')
  assert.deepEqual(sent.slice(1).map((m) => [m.role, m.content]), [
    ['user', 'read hello.txt'],
    ['assistant', 'Let me read it.'],
    ['tool', 'hi there'],
    ['assistant', 'The file says hi there.'],
    ['user', 'what did I ask?']
  ])
  assert.deepEqual(sent[2]?.tool_calls?.map((c) => [c.id, c.function.name, c.function.arguments]), [['c1', 'file_read', '{"path":"hello.txt"}']])
  assert.equal(sent[3]?.tool_call_id, 'c1')
})

test('GET of an unknown session answers 404 SESSION_NOT_FOUND', async (t) => {
  const g = await withHello(t)
  assertProblem(await g.http('GET', '/v1/sessions/never-used'), 404, 'SESSION_NOT_FOUND')
})

test('an unknown route answers 404 NOT_FOUND problem JSON', async (t) => {
  const g = await withHello(t)
  const res = await g.http('GET', '/v1/nothing-here?x=1')
  assertProblem(res, 404, 'NOT_FOUND')
  assert.equal(res.body.title, 'no route GET /v1/nothing-here')
})

test('DELETE of a finished turn answers 200 with its final status and changes nothing', async (t) => {
  const g = await withHello(t)
  g.provider.enqueue({ text: 'hi' })
  const { turn, events } = await runTurn(g, { message: 'hello' })
  const res = await g.http('DELETE', `/v1/turns/${turn.turn_id}`)
  assert.equal(res.status, 200)
  assert.deepEqual(res.body, { turn_id: turn.turn_id, status: 'completed' })
  assert.deepEqual(await turnEvents(g, turn.turn_id), events)
  assert.equal((await g.http('GET', `/v1/turns/${turn.turn_id}`)).body.status, 'completed')
})

test('DELETE of an unknown turn answers 404 TURN_NOT_FOUND', async (t) => {
  const g = await withHello(t)
  assertProblem(await g.http('DELETE', '/v1/turns/turn_nope'), 404, 'TURN_NOT_FOUND')
})

test('/healthz answers ok and /readyz answers ready while the gateway runs', async (t) => {
  const g = await withHello(t)
  const health = await g.http('GET', '/healthz')
  assert.equal(health.status, 200)
  assert.deepEqual(health.body, { status: 'ok' })
  const ready = await g.http('GET', '/readyz')
  assert.equal(ready.status, 200)
  assert.deepEqual(ready.body, { status: 'ready' })
})
