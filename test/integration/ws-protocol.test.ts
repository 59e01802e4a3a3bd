import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startGateway, shape, assertSeqContiguous, type TestGateway, type TestSocket } from '../helpers/gateway.js'
import type { RecordedRequest, ScriptedReply } from '../helpers/fake-provider.js'
import type { EventEnvelope } from '../../schemas/events.js'
import { finishedTurn, gate, runTurn, startTurn, turnEvents } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

const TOOL_TURN = ['turn.started', 'iteration', 'tool_call:file_read', 'tool_result:file_read:ok', 'iteration', 'turn.completed']

async function gateway (t: { after: (fn: () => Promise<void>) => void }, overrides?: unknown): Promise<TestGateway> {
  const g = await startGateway(overrides === undefined ? {} : { overrides })
  t.after(() => g.close())
  await writeFile(join(g.workspace, 'hello.txt'), 'hi there')
  return g
}

/** Answers whatever turn asks: a user message `read X` reads X, a tool result is summarised. */
function readerScript (request: RecordedRequest): ScriptedReply {
  const last = request.body.messages.at(-1)
  if (last?.role === 'tool') return { text: `read: ${last.content ?? ''}` }
  const path = /read (\S+)/.exec(last?.content ?? '')?.[1] ?? 'hello.txt'
  return { toolCalls: [{ id: `c-${path}`, name: 'file_read', arguments: { path } }] }
}

/** An event frame as an event-log envelope (the frame adds only `type`). */
function envelopes (frames: readonly EventEnvelope[]): EventEnvelope[] {
  return frames.map((f) => {
    const { type: _type, ...envelope } = f as EventEnvelope & { type?: string }
    return envelope
  })
}

/** Round trip that proves every frame the server sent before it has arrived. */
async function flush (ws: TestSocket): Promise<void> {
  assert.equal((await ws.request({ type: 'ping' })).type, 'pong')
}

test('the server echoes the tollgate.v1 subprotocol', async (t) => {
  const g = await gateway(t)
  const ws = await g.socket({ protocols: ['tollgate.v1'] })
  assert.equal(ws.ws.protocol, 'tollgate.v1')
})

test('an upgrade that does not offer the tollgate.v1 subprotocol is refused with 400 SUBPROTOCOL_REQUIRED', async (t) => {
  const g = await gateway(t)
  for (const protocols of [[], ['graphql-ws'], ['tollgate.v2', 'bearer.x']]) {
    const refused = (err: any): boolean => err.statusCode === 400 && err.body.code === 'SUBPROTOCOL_REQUIRED'
    await assert.rejects(g.socket({ protocols }), refused, JSON.stringify(protocols))
  }
  const ws = await g.socket({ protocols: ['other', 'tollgate.v1'] })
  assert.equal(ws.ws.protocol, 'tollgate.v1')
})

test('hello is answered with a welcome carrying the connection id and heartbeat interval', async (t) => {
  const g = await gateway(t, { ws: { heartbeat_ms: 45_000 } })
  const ws = await g.socket()
  const welcome = await ws.request({ type: 'hello', client: 'test-suite' })
  assert.equal(welcome.type, 'welcome')
  assert.match(welcome.connection_id, /^ws_/)
  assert.equal(welcome.heartbeat_ms, 45_000)
  assert.equal(g.gateway.connections.get(welcome.connection_id)?.kind, 'ws')
})

test('ping is answered with a pong carrying the same ref', async (t) => {
  const g = await gateway(t)
  const ws = await g.socket()
  ws.send({ type: 'ping', ref: 'p-1' })
  assert.deepEqual(await ws.next(), { type: 'pong', ref: 'p-1' })
})

test('a frame that is not JSON is answered with an INVALID_JSON error', async (t) => {
  const g = await gateway(t)
  const ws = await g.socket()
  ws.send('{"type": "ping"')
  const err = await ws.next()
  assert.equal(err.type, 'error')
  assert.equal(err.code, 'INVALID_JSON')
  assert.equal(err.ref, undefined)
})

test('a frame of an unknown type is answered with UNKNOWN_FRAME_TYPE and its ref', async (t) => {
  const g = await gateway(t)
  const ws = await g.socket()
  ws.send({ type: 'launch.missiles', ref: 'u-1' })
  const err = await ws.next()
  assert.equal(err.type, 'error')
  assert.equal(err.code, 'UNKNOWN_FRAME_TYPE')
  assert.equal(err.ref, 'u-1')
})

test('schema-invalid frames are answered with INVALID_FRAME and their ref', async (t) => {
  const g = await gateway(t)
  const ws = await g.socket()
  const cases: Array<[string, Record<string, unknown>]> = [
    ['a missing field', { type: 'cancel' }],
    ['an extra field', { type: 'ping', colour: 'blue' }],
    ['a field of the wrong type', { type: 'subscribe', turn_id: 'turn_x', after_seq: 'three' }],
    ['an unknown approval decision', { type: 'approval.respond', request_id: 'apr_1', decision: 'maybe' }],
    ['a turn.start without a message', { type: 'turn.start' }]
  ]
  for (const [name, frame] of cases) {
    await t.test(name, async () => {
      const ref = `bad-${name.replaceAll(' ', '-')}`
      ws.send({ ...frame, ref })
      const err = await ws.next((f) => f.ref === ref)
      assert.equal(err.type, 'error')
      assert.equal(err.code, 'INVALID_FRAME')
      assert.equal(typeof err.message, 'string')
    })
  }
  assert.equal(g.provider.requests.length, 0)
})

test('error frames never close the socket: a valid frame still works afterwards', async (t) => {
  const g = await gateway(t)
  const ws = await g.socket()
  ws.send('not json at all')
  ws.send({ type: 'nope', ref: 'e1' })
  ws.send({ type: 'ping', extra: true, ref: 'e2' })
  ws.send({ type: 'subscribe', turn_id: 'turn_missing', ref: 'e3' })
  const codes = []
  for (let i = 0; i < 4; i++) codes.push((await ws.next((f) => f.type === 'error')).code)
  assert.deepEqual(codes, ['INVALID_JSON', 'UNKNOWN_FRAME_TYPE', 'INVALID_FRAME', 'TURN_NOT_FOUND'])
  g.provider.enqueue({ text: 'still here' })
  const accepted = await ws.request({ type: 'turn.start', message: 'hello' })
  assert.equal(accepted.type, 'turn.accepted')
  const events = await ws.waitForTerminal(accepted.turn_id)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'turn.completed'])
  assert.equal(ws.closeCode, null)
})

test('subscribing to an unknown turn is answered with TURN_NOT_FOUND', async (t) => {
  const g = await gateway(t)
  const ws = await g.socket()
  const err = await ws.request({ type: 'subscribe', turn_id: 'turn_unknown' })
  assert.equal(err.type, 'error')
  assert.equal(err.code, 'TURN_NOT_FOUND')
})

test('subscribing to an unknown session is answered with SESSION_NOT_FOUND', async (t) => {
  const g = await gateway(t)
  const ws = await g.socket()
  const err = await ws.request({ type: 'subscribe', session_id: 'no-such-session' })
  assert.equal(err.code, 'SESSION_NOT_FOUND')
})

test('subscribe must name exactly one of turn_id and session_id', async (t) => {
  const g = await gateway(t)
  const ws = await g.socket()
  const both = await ws.request({ type: 'subscribe', turn_id: 'turn_a', session_id: 'ses-a' })
  assert.equal(both.type, 'error')
  assert.equal(both.code, 'INVALID_FRAME')
  const neither = await ws.request({ type: 'subscribe' })
  assert.equal(neither.code, 'INVALID_FRAME')
})

test('subscribe with after_seq replays exactly the missed events, then live ones, without duplicates', async (t) => {
  const g = await gateway(t)
  const hold = gate()
  g.provider.enqueue(
    { text: 'Let me read it.', toolCalls: [{ id: 'c1', name: 'file_read', arguments: { path: 'hello.txt' } }] },
    { text: 'The file says hi there.', gate: hold.promise }
  )
  const { turn_id: turnId } = await startTurn(g, { message: 'read hello.txt' })
  await eventually(() => g.provider.requests.length === 2, { what: 'the second provider request' })
  const soFar = await turnEvents(g, turnId)
  const ws = await g.socket()
  const subscribed = await ws.request({ type: 'subscribe', turn_id: turnId, after_seq: 3 })
  assert.equal(subscribed.type, 'subscribed')
  assert.equal(subscribed.status, 'running')
  assert.equal(subscribed.last_seq, soFar.length)
  await ws.waitForEvent(turnId, (e) => e.kind === 'iteration' && e.n === 2)
  assert.deepEqual(ws.events(turnId).map((e) => e.seq), soFar.slice(3).map((e) => e.seq))
  assert.ok(ws.frames.indexOf(subscribed) < ws.frames.findIndex((f) => f.type === 'event'), 'subscribed comes before the replay')
  hold.open()
  const received = await ws.waitForTerminal(turnId)
  const all = await turnEvents(g, turnId)
  assert.deepEqual(received.map((e) => e.seq), all.slice(3).map((e) => e.seq))
  assert.deepEqual(envelopes(received), all.slice(3))
  assert.deepEqual(shape(all), TOOL_TURN)
  await flush(ws)
  assert.equal(ws.events(turnId).length, all.length - 3)
})

test('a subscribe whose after_seq is not an exact seq is answered with INVALID_FRAME', async (t) => {
  const g = await gateway(t)
  const ws = await g.socket()
  // Written by hand: JSON.stringify cannot spell 1e400, which JSON.parse reads as Infinity.
  for (const bad of ['1e400', '-1', '1.5', '9007199254740992']) {
    ws.send(`{"type":"subscribe","turn_id":"turn_x","after_seq":${bad},"ref":"cursor-${bad}"}`)
    const err = await ws.next((f) => f.ref === `cursor-${bad}`)
    assert.deepEqual([err.type, err.code], ['error', 'INVALID_FRAME'], `after_seq ${bad}`)
  }
  assert.equal(ws.closeCode, null)
})

test('a subscription resuming past the turn\'s last seq receives nothing and ends with the turn', async (t) => {
  // One subscription per socket: the next subscribe is accepted only once the first has ended.
  const g = await gateway(t, { ws: { max_subscriptions: 1 } })
  const hold = gate()
  g.provider.enqueue({ text: 'done', gate: hold.promise }, { text: 'second' })
  const { turn_id: turnId } = await startTurn(g, { message: 'hello' })
  await eventually(() => g.provider.requests.length === 1, { what: 'the provider request' })
  const ws = await g.socket()
  const subscribed = await ws.request({ type: 'subscribe', turn_id: turnId, after_seq: 999999999 })
  assert.deepEqual([subscribed.type, subscribed.status], ['subscribed', 'running'])
  hold.open()
  await finishedTurn(g, turnId)
  const { turn_id: next } = await startTurn(g, { message: 'again' })
  await eventually(async () => (await ws.request({ type: 'subscribe', turn_id: next })).type === 'subscribed', { what: 'the first subscription to end' })
  assert.deepEqual(ws.events(turnId), [])
})

test('a session subscription delivers the events of later turns of that session', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ text: 'first answer' }, readerScript, readerScript)
  const { turn: first } = await runTurn(g, { message: 'hello', session_id: 'watched' })
  const ws = await g.socket()
  const subscribed = await ws.request({ type: 'subscribe', session_id: 'watched' })
  assert.deepEqual(subscribed, { type: 'subscribed', ref: subscribed.ref, session_id: 'watched' })
  const second = await startTurn(g, { message: 'read hello.txt', session_id: 'watched' })
  const events = await ws.waitForTerminal(second.turn_id)
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), TOOL_TURN)
  assert.deepEqual(ws.events(first.turn_id), [])
})

test('a socket that owns a turn and watches its session receives each event of the turn once', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ text: 'first' }, readerScript, readerScript)
  const ws = await g.socket()
  const first = await ws.request({ type: 'turn.start', message: 'hello', session_id: 'owned-and-watched' })
  await ws.waitForTerminal(first.turn_id)
  await ws.request({ type: 'subscribe', session_id: 'owned-and-watched' })
  const second = await ws.request({ type: 'turn.start', message: 'read hello.txt', session_id: 'owned-and-watched' })
  const events = await ws.waitForTerminal(second.turn_id)
  await flush(ws)
  assertSeqContiguous(ws.events(second.turn_id))
  assert.deepEqual(shape(events), TOOL_TURN)
})

test('subscribing to a running turn of a watched session replays it once and never doubles live events', async (t) => {
  const g = await gateway(t)
  const hold = gate()
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'file_read', arguments: { path: 'hello.txt' } }], gate: hold.promise },
    { text: 'done' }
  )
  const { turn_id: turnId } = await startTurn(g, { message: 'read hello.txt', session_id: 'watched-twice' })
  await eventually(() => g.provider.requests.length === 1, { what: 'the first provider request' })
  const ws = await g.socket()
  await ws.request({ type: 'subscribe', session_id: 'watched-twice' })
  await ws.request({ type: 'subscribe', turn_id: turnId, after_seq: 0 })
  hold.open()
  await ws.waitForTerminal(turnId)
  await flush(ws)
  const received = ws.events(turnId)
  assertSeqContiguous(received)
  assert.deepEqual(envelopes(received), await turnEvents(g, turnId))
})

test('unsubscribe stops the events of that turn', async (t) => {
  const g = await gateway(t)
  const hold = gate()
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'file_read', arguments: { path: 'hello.txt' } }] },
    { text: 'done', gate: hold.promise }
  )
  const { turn_id: turnId } = await startTurn(g, { message: 'read hello.txt' })
  await eventually(() => g.provider.requests.length === 2, { what: 'the second provider request' })
  const ws = await g.socket()
  await ws.request({ type: 'subscribe', turn_id: turnId })
  await ws.waitForEvent(turnId, (e) => e.kind === 'iteration' && e.n === 2)
  const before = ws.events(turnId).length
  const ack = await ws.request({ type: 'unsubscribe', turn_id: turnId })
  assert.equal(ack.type, 'unsubscribed')
  assert.equal(ack.turn_id, turnId)
  hold.open()
  assert.equal((await finishedTurn(g, turnId)).status, 'completed')
  await flush(ws)
  assert.equal(ws.events(turnId).length, before)
  assert.ok(!ws.events(turnId).some((e) => e.event.kind === 'turn.completed'))
})

test('subscribing past the retained event log is answered with REPLAY_GAP; within it the replay is exact', async (t) => {
  const g = await gateway(t, { turns: { max_events_per_turn: 16 } })
  g.provider.enqueue({ text: 'a long answer that streams in many small pieces, '.repeat(4) })
  const turn = await finishedTurn(g, (await startTurn(g, { message: 'talk to me' })).turn_id)
  assert.ok(turn.last_seq > 16, `the turn produced only ${turn.last_seq} events`)
  const ws = await g.socket()
  const gap = await ws.request({ type: 'subscribe', turn_id: turn.turn_id, after_seq: 0 })
  assert.equal(gap.type, 'error')
  assert.equal(gap.code, 'REPLAY_GAP')
  await flush(ws)
  assert.deepEqual(ws.frames.filter((f) => f.ref === gap.ref).map((f) => f.type), ['error'])
  assert.deepEqual(ws.events(turn.turn_id), [])
  const oldestKept = turn.last_seq - 16 + 1
  const ok = await ws.request({ type: 'subscribe', turn_id: turn.turn_id, after_seq: oldestKept - 1 })
  assert.equal(ok.type, 'subscribed')
  const events = await ws.waitForTerminal(turn.turn_id)
  assert.deepEqual(events.map((e) => e.seq), Array.from({ length: 16 }, (_, i) => oldestKept + i))
  assert.equal(events.at(-1)?.event.kind, 'turn.completed')
})

test('many turns multiplexed on one socket each arrive with contiguous seqs', async (t) => {
  const g = await gateway(t)
  for (const name of ['a.txt', 'b.txt', 'c.txt']) await writeFile(join(g.workspace, name), `content of ${name}`)
  g.provider.enqueue(...Array.from({ length: 6 }, () => readerScript))
  const ws = await g.socket()
  const accepted = await Promise.all(['a.txt', 'b.txt', 'c.txt'].map(async (name) => await ws.request({ type: 'turn.start', message: `read ${name}` })))
  assert.equal(new Set(accepted.map((a) => a.turn_id)).size, 3)
  for (const [i, a] of accepted.entries()) {
    const events = await ws.waitForTerminal(a.turn_id)
    assertSeqContiguous(events)
    assert.deepEqual(shape(events), TOOL_TURN)
    const done = events.at(-1)?.event
    assert.equal(done?.kind === 'turn.completed' && done.final_text, `read: content of ${['a.txt', 'b.txt', 'c.txt'][i] ?? ''}`)
  }
})

test('POST /v1/turns with owner_connection streams the turn to that socket without a subscribe', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue(readerScript, readerScript)
  const ws = await g.socket()
  const { connection_id: connectionId } = await ws.request({ type: 'hello' })
  const { turn_id: turnId } = await startTurn(g, { message: 'read hello.txt', owner_connection: connectionId })
  const events = await ws.waitForTerminal(turnId)
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), TOOL_TURN)
  assert.deepEqual(envelopes(events), await turnEvents(g, turnId))
})

test('POST /v1/turns with an unknown owner_connection is refused with 400 CONNECTION_NOT_FOUND', async (t) => {
  const g = await gateway(t)
  const res = await g.http('POST', '/v1/turns', { message: 'hi', owner_connection: 'ws_not-a-live-connection' })
  assert.equal(res.status, 400)
  assert.equal(res.body.code, 'CONNECTION_NOT_FOUND')
  assert.equal(res.body.status, 400)
  assert.equal(g.provider.requests.length, 0)
})

test('a frame over ws.max_payload_bytes closes the socket with 1009', async (t) => {
  const g = await gateway(t, { ws: { max_payload_bytes: 1024 } })
  const ws = await g.socket()
  ws.send({ type: 'turn.start', message: 'x'.repeat(2048) })
  assert.equal(await ws.closed(), 1009)
  assert.equal(g.provider.requests.length, 0)
})
