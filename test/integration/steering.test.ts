/**
 * Steering through the real server: a message added while a turn runs joins the model's history
 * before the next model call (after the round's tool results), is in the event log as
 * `user.message`, keeps a turn going that would have ended, and is refused once the turn is over
 * or when too many wait.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { finishedTurn, gate, startTurn, turnEvents } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

async function steer (g: TestGateway, turnId: string, message: string): Promise<{ status: number, body: any }> {
  return await g.http('POST', `/v1/turns/${turnId}/messages`, { message })
}

/** Waits until the provider holds `n` requests open (the turn's model call is under way). */
async function modelCallOpen (g: TestGateway, n = 1): Promise<void> {
  await eventually(() => g.provider.open() === n, { what: 'the model call to arrive' })
}

test('a message POSTed during the first model call reaches the second model request right after the tool result, and is logged as user.message', async (t) => {
  const g = await startGateway()
  t.after(async () => { await g.close() })
  await mkdir(g.workspace, { recursive: true })
  await writeFile(join(g.workspace, 'notes.txt'), 'the notes\n')
  const held = gate()
  g.provider.enqueue({ toolCalls: [{ id: 'r1', name: 'file_read', arguments: { path: 'notes.txt' } }], gate: held.promise })
  g.provider.enqueue({ text: 'Read it, and I will keep it short.' })
  const { turn_id: turnId } = await startTurn(g, { message: 'read notes.txt' })
  await modelCallOpen(g)

  const accepted = await steer(g, turnId, 'keep the answer short')
  assert.equal(accepted.status, 202, JSON.stringify(accepted.body))
  assert.deepEqual({ ...accepted.body, seq: undefined }, { turn_id: turnId, seq: undefined, n: 1, queued: 1 })
  held.open()

  const turn = await finishedTurn(g, turnId)
  assert.equal(turn.status, 'completed')
  assert.equal(g.provider.requests.length, 2)
  const second = g.provider.requests[1]?.body.messages ?? []
  assert.deepEqual(second.slice(-3).map((m) => m.role), ['assistant', 'tool', 'user'])
  assert.match(String(second.at(-2)?.content), /the notes/)
  assert.equal(second.at(-1)?.content, 'keep the answer short')
  // The first request did not have it: it was on its way when the message came.
  assert.equal(g.provider.requests[0]?.body.messages.some((m) => m.content === 'keep the answer short'), false)

  const log = await turnEvents(g, turnId)
  const steered = log.filter((e) => e.event.kind === 'user.message')
  assert.deepEqual(steered.map((e) => e.event), [{ kind: 'user.message', message: 'keep the answer short', n: 1 }])
  assert.equal(steered[0]?.seq, accepted.body.seq)
  // Recorded before the second iteration began.
  const iteration2 = log.findIndex((e) => e.event.kind === 'iteration' && e.event.n === 2)
  assert.ok(log.indexOf(steered[0] as never) < iteration2)
})

test('a message sent while the model writes its final answer makes the turn run one more iteration instead of being dropped', async (t) => {
  const g = await startGateway()
  t.after(async () => { await g.close() })
  const held = gate()
  g.provider.enqueue({ text: 'Here is the long version.', gate: held.promise })
  g.provider.enqueue({ text: 'Short version.' })
  const { turn_id: turnId } = await startTurn(g, { message: 'explain' })
  await modelCallOpen(g)
  assert.equal((await steer(g, turnId, 'actually, make it short')).status, 202)
  held.open()

  const turn = await finishedTurn(g, turnId)
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, 'Short version.')
  assert.equal(turn.iterations, 2)
  const second = g.provider.requests[1]?.body.messages ?? []
  assert.deepEqual(second.slice(-3).map((m) => [m.role, m.content]), [
    ['user', 'explain'], ['assistant', 'Here is the long version.'], ['user', 'actually, make it short']
  ])
  // The session keeps the whole exchange for the next turn.
  g.provider.enqueue({ text: 'You are welcome.' })
  const next = await startTurn(g, { message: 'thanks', session_id: turn.session_id })
  await finishedTurn(g, next.turn_id)
  assert.deepEqual(g.provider.requests[2]?.body.messages.slice(-4).map((m) => m.content), [
    'Here is the long version.', 'actually, make it short', 'Short version.', 'thanks'
  ])
})

test('messages wait in order and join the history together; one more than turns.max_steering_messages is refused with STEERING_QUEUE_FULL', async (t) => {
  const g = await startGateway({ overrides: { turns: { max_steering_messages: 2 } } })
  t.after(async () => { await g.close() })
  const held = gate()
  g.provider.enqueue({ text: 'first', gate: held.promise })
  g.provider.enqueue({ text: 'second' })
  const { turn_id: turnId } = await startTurn(g, { message: 'go' })
  await modelCallOpen(g)
  assert.equal((await steer(g, turnId, 'one')).body.queued, 1)
  assert.equal((await steer(g, turnId, 'two')).body.queued, 2)
  const full = await steer(g, turnId, 'three')
  assert.equal(full.status, 429)
  assert.equal(full.body.code, 'STEERING_QUEUE_FULL')
  held.open()
  await finishedTurn(g, turnId)
  assert.deepEqual(g.provider.requests[1]?.body.messages.slice(-2).map((m) => m.content), ['one', 'two'])
  const logged = (await turnEvents(g, turnId)).filter((e) => e.event.kind === 'user.message').map((e) => e.event)
  assert.deepEqual(logged, [{ kind: 'user.message', message: 'one', n: 1 }, { kind: 'user.message', message: 'two', n: 2 }])
})

test('a finished turn refuses a message with 409 STEERING_CLOSED; an unknown turn is 404 and an empty message 400', async (t) => {
  const g = await startGateway()
  t.after(async () => { await g.close() })
  g.provider.enqueue({ text: 'done' })
  const { turn_id: turnId } = await startTurn(g, { message: 'hi' })
  await finishedTurn(g, turnId)
  const closed = await steer(g, turnId, 'too late')
  assert.equal(closed.status, 409)
  assert.equal(closed.body.code, 'STEERING_CLOSED')
  const missing = await steer(g, '0190f0f0-0000-7000-8000-000000000000', 'hello')
  assert.equal(missing.status, 404)
  assert.equal(missing.body.code, 'TURN_NOT_FOUND')
  const empty = await steer(g, turnId, '')
  assert.equal(empty.status, 400)
})

test('the WebSocket turn.steer frame steers a turn and is answered with steer.accepted; the socket sees the user.message event', async (t) => {
  const g = await startGateway()
  t.after(async () => { await g.close() })
  const held = gate()
  g.provider.enqueue({ text: 'long', gate: held.promise })
  g.provider.enqueue({ text: 'short' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'explain' })
  const turnId = accepted.turn_id as string
  await modelCallOpen(g)
  const ack = await ws.request({ type: 'turn.steer', turn_id: turnId, message: 'shorter' })
  assert.equal(ack.type, 'steer.accepted', JSON.stringify(ack))
  assert.equal(ack.turn_id, turnId)
  assert.equal(ack.n, 1)
  held.open()
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(events.filter((e) => e.event.kind === 'user.message').map((e) => e.event), [{ kind: 'user.message', message: 'shorter', n: 1 }])
  assert.equal(events.at(-1)?.event.kind, 'turn.completed')
  const late = await ws.request({ type: 'turn.steer', turn_id: turnId, message: 'again' })
  assert.deepEqual([late.type, late.code], ['error', 'STEERING_CLOSED'])
})
