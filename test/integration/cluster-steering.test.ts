/**
 * Steering across instances sharing PostgreSQL and Redis: a message POSTed to instance B for a
 * turn running on instance A reaches A's queue over the control plane, and A's model reads it.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startFakeProvider } from '../helpers/fake-provider.js'
import { startGateway } from '../helpers/gateway.js'
import { clusterOverrides, scratchWorkspace } from '../helpers/cluster.js'
import { deferrer, scratchPrefix, scratchSchema } from '../helpers/services.js'
import { gate } from '../helpers/turns.js'
import { ALL_SCOPES, bearer, jwtAuth, mintToken } from '../helpers/tokens.js'
import { eventually } from '../helpers/eventually.js'

test('a message POSTed to instance B for a turn running on instance A is queued there, logged once, and read by A\'s next model call', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const schema = scratchSchema(defer)
  const prefix = scratchPrefix(defer)
  const instance = async (): Promise<Awaited<ReturnType<typeof startGateway>>> => {
    const g = await startGateway({ provider, overrides: clusterOverrides({ provider, schema, prefix }, await scratchWorkspace(defer)) })
    defer(async () => { await g.close() })
    return g
  }
  const a = await instance()
  const b = await instance()
  const held = gate()
  provider.enqueue({ text: 'long', gate: held.promise }, { text: 'short' })
  const started = await a.http('POST', '/v1/turns', { message: 'explain', detach: true })
  assert.equal(started.status, 202)
  const turnId = started.body.turn_id as string
  await eventually(() => provider.open() === 1, { what: 'the model call on A' })

  const steered = await b.http('POST', `/v1/turns/${turnId}/messages`, { message: 'shorter' })
  assert.equal(steered.status, 202, JSON.stringify(steered.body))
  assert.deepEqual({ turn_id: steered.body.turn_id, n: steered.body.n, queued: steered.body.queued }, { turn_id: turnId, n: 1, queued: 1 })
  held.open()
  await eventually(async () => (await b.http('GET', `/v1/turns/${turnId}`)).body.status !== 'running', { what: 'the turn to end' })
  assert.equal((await b.http('GET', `/v1/turns/${turnId}`)).body.final_text, 'short')
  assert.equal(provider.requests[1]?.body.messages.at(-1)?.content, 'shorter')
  const events = (await b.http('GET', `/v1/turns/${turnId}/events`)).body.events as Array<{ seq: number, event: { kind: string } }>
  assert.deepEqual(events.filter((e) => e.event.kind === 'user.message').map((e) => e.seq), [steered.body.seq])

  const late = await b.http('POST', `/v1/turns/${turnId}/messages`, { message: 'too late' })
  assert.deepEqual([late.status, late.body.code], [409, 'STEERING_CLOSED'])
})

test('a holder of turns:steer steers another principal\'s turn of its tenant through instance B; without the scope it is 404 there too', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const schema = scratchSchema(defer)
  const prefix = scratchPrefix(defer)
  const instance = async (): Promise<Awaited<ReturnType<typeof startGateway>>> => {
    const g = await startGateway({
      provider, overrides: clusterOverrides({ provider, schema, prefix }, await scratchWorkspace(defer), jwtAuth())
    })
    defer(async () => { await g.close() })
    return g
  }
  const a = await instance()
  const b = await instance()
  const alice = await mintToken({ tenant: 'acme', sub: 'alice' })
  const bob = await mintToken({ tenant: 'acme', sub: 'bob', scopes: [...ALL_SCOPES, 'turns:steer'] })
  const carol = await mintToken({ tenant: 'acme', sub: 'carol' })
  const held = gate()
  provider.enqueue({ text: 'long', gate: held.promise }, { text: 'short' })
  const started = await a.http('POST', '/v1/turns', { message: 'explain', detach: true }, bearer(alice))
  assert.equal(started.status, 202)
  const turnId = started.body.turn_id as string
  await eventually(() => provider.open() === 1, { what: 'the model call on A' })

  const refused = await b.http('POST', `/v1/turns/${turnId}/messages`, { message: 'listen to me' }, bearer(carol))
  assert.deepEqual([refused.status, refused.body.code], [404, 'TURN_NOT_FOUND'])
  const steered = await b.http('POST', `/v1/turns/${turnId}/messages`, { message: 'shorter' }, bearer(bob))
  assert.equal(steered.status, 202, JSON.stringify(steered.body))
  held.open()
  await eventually(async () => (await b.http('GET', `/v1/turns/${turnId}`, undefined, bearer(alice))).body.status !== 'running', { what: 'the turn to end' })
  assert.equal(provider.requests[1]?.body.messages.at(-1)?.content, 'shorter')
  const events = (await b.http('GET', `/v1/turns/${turnId}/events`, undefined, bearer(alice))).body.events as Array<{ event: { kind: string } }>
  assert.deepEqual(events.filter((e) => e.event.kind === 'user.message').map((e) => e.event), [{ kind: 'user.message', message: 'shorter', n: 1, sent_by: 'acme/bob' }])
})
