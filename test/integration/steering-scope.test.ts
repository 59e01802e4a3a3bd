/**
 * Steering by another principal: a holder of `turns:steer` (with `turns:write`) may steer any
 * running turn of its own tenant, over HTTP and WS, and the `user.message` event names it in
 * `sent_by`; without the scope, or from another tenant, the turn answers as missing (404).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { eventually } from '../helpers/eventually.js'
import { ALL_SCOPES, bearer, jwtAuth, mintToken } from '../helpers/tokens.js'
import { gate } from '../helpers/turns.js'

const STEER_SCOPES = [...ALL_SCOPES, 'turns:steer']

async function steer (g: TestGateway, token: string, turnId: string, message: string): Promise<{ status: number, body: any }> {
  return await g.http('POST', `/v1/turns/${turnId}/messages`, { message }, bearer(token))
}

test('a principal of the same tenant with turns:steer steers another principal\'s turn over HTTP and WS; the event names who sent it', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(async () => { await g.close() })
  const alice = await mintToken({ tenant: 'acme', sub: 'alice' })
  const bob = await mintToken({ tenant: 'acme', sub: 'bob', scopes: STEER_SCOPES })
  const held = gate()
  g.provider.enqueue({ text: 'the long version', gate: held.promise })
  g.provider.enqueue({ text: 'short' })
  const owner = await g.socket({ protocols: ['tollgate.v1', `bearer.${alice}`] })
  const turnId = (await owner.request({ type: 'turn.start', message: 'explain' })).turn_id as string
  await eventually(() => g.provider.open() === 1, { what: 'the model call to arrive' })

  const posted = await steer(g, bob, turnId, 'shorter, please')
  assert.equal(posted.status, 202, JSON.stringify(posted.body))
  assert.deepEqual([posted.body.turn_id, posted.body.n, posted.body.queued], [turnId, 1, 1])
  const supervisor = await g.socket({ protocols: ['tollgate.v1', `bearer.${bob}`] })
  const ack = await supervisor.request({ type: 'turn.steer', turn_id: turnId, message: 'and in French' })
  assert.deepEqual([ack.type, ack.turn_id, ack.n], ['steer.accepted', turnId, 2], JSON.stringify(ack))
  const own = await steer(g, alice, turnId, 'thanks')
  assert.equal(own.status, 202, JSON.stringify(own.body))
  held.open()

  const events = await owner.waitForTerminal(turnId)
  assert.equal(events.at(-1)?.event.kind, 'turn.completed')
  assert.deepEqual(events.filter((e) => e.event.kind === 'user.message').map((e) => e.event), [
    { kind: 'user.message', message: 'shorter, please', n: 1, sent_by: 'acme/bob' },
    { kind: 'user.message', message: 'and in French', n: 2, sent_by: 'acme/bob' },
    { kind: 'user.message', message: 'thanks', n: 3 }
  ])
  const second = g.provider.requests[1]?.body.messages ?? []
  assert.deepEqual(second.slice(-3).map((m) => [m.role, m.content]), [['user', 'shorter, please'], ['user', 'and in French'], ['user', 'thanks']])
})

test('without turns:steer, or from another tenant, another principal\'s turn answers 404 TURN_NOT_FOUND over HTTP and WS', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(async () => { await g.close() })
  const alice = await mintToken({ tenant: 'acme', sub: 'alice' })
  const carol = await mintToken({ tenant: 'acme', sub: 'carol' })
  const mallory = await mintToken({ tenant: 'other', sub: 'mallory', scopes: STEER_SCOPES })
  const held = gate()
  g.provider.enqueue({ text: 'done', gate: held.promise })
  const owner = await g.socket({ protocols: ['tollgate.v1', `bearer.${alice}`] })
  const turnId = (await owner.request({ type: 'turn.start', message: 'explain' })).turn_id as string
  await eventually(() => g.provider.open() === 1, { what: 'the model call to arrive' })

  for (const token of [carol, mallory]) {
    const posted = await steer(g, token, turnId, 'listen to me')
    assert.deepEqual([posted.status, posted.body.code], [404, 'TURN_NOT_FOUND'])
    const ws = await g.socket({ protocols: ['tollgate.v1', `bearer.${token}`] })
    const frame = await ws.request({ type: 'turn.steer', turn_id: turnId, message: 'listen to me' })
    assert.deepEqual([frame.type, frame.code], ['error', 'TURN_NOT_FOUND'])
  }
  held.open()
  const events = await owner.waitForTerminal(turnId)
  assert.equal(events.at(-1)?.event.kind, 'turn.completed')
  assert.equal(events.filter((e) => e.event.kind === 'user.message').length, 0)
})

test('a holder of turns:steer steering a turn that has ended gets 409 STEERING_CLOSED', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(async () => { await g.close() })
  const alice = await mintToken({ tenant: 'acme', sub: 'alice' })
  const bob = await mintToken({ tenant: 'acme', sub: 'bob', scopes: STEER_SCOPES })
  g.provider.enqueue({ text: 'done' })
  const owner = await g.socket({ protocols: ['tollgate.v1', `bearer.${alice}`] })
  const turnId = (await owner.request({ type: 'turn.start', message: 'hi' })).turn_id as string
  await owner.waitForTerminal(turnId)
  await eventually(async () => (await g.http('GET', `/v1/turns/${turnId}`, undefined, bearer(alice))).body.status === 'completed', { what: 'the turn record to be completed' })
  const late = await steer(g, bob, turnId, 'too late')
  assert.deepEqual([late.status, late.body.code], [409, 'STEERING_CLOSED'])
})
