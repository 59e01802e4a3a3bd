import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { clusterOverrides, scratchWorkspace, spawnGateway } from '../helpers/cluster.js'
import { cleanupStack, deferrer, REDIS_URL, scratchPrefix, scratchSchema, startPrivateRedis } from '../helpers/services.js'
import { startSlowLink } from '../helpers/slow-link.js'
import { createProbes, type Probes } from '../helpers/tools.js'
import { finishedTurn, gate, startTurn } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

const MASTER = randomBytes(32).toString('base64')
const SHARED = {
  turns: { max_active_turns_per_principal: 2 },
  // A running turn's slot (and its instance's lease) lapses after lease_ms without a renewal: on a
  // starved machine the helpers' 2 s could pass between two renewals and free a slot the cap test
  // counts on. Slots freeing themselves when an instance dies has its own test below.
  cluster: { lease_ms: 60_000 },
  receipts: { keys: [{ id: 'k1', secret_env: 'RECEIPT_K1' }] },
  agents: { default: { provider: 'fake', runtime_profile: 'receipts', tools: ['probe'] } },
  runtime_profiles: { receipts: { tool_receipts: { enabled: true } } },
  risk_profiles: { default: { level: 'full' } }
}

function assertProblem (res: { status: number, body: any }, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body))
  assert.equal(res.body.code, code, JSON.stringify(res.body))
}

describe('two instances sharing PostgreSQL and Redis share idempotency keys, receipt keys and per-principal turn caps', () => {
  const cleanup = cleanupStack()
  let provider: FakeProvider
  let probes: Probes
  let schema: string
  let prefix: string
  let a: TestGateway
  let b: TestGateway
  const start = async (): Promise<TestGateway> => {
    const g = await startGateway({
      provider,
      tools: probes.tools,
      env: { RECEIPT_K1: MASTER },
      overrides: clusterOverrides({ provider, schema, prefix }, await scratchWorkspace(cleanup.defer), SHARED)
    })
    cleanup.defer(async () => { await g.close() })
    return g
  }
  before(async () => {
    provider = await startFakeProvider()
    cleanup.defer(async () => { await provider.close() })
    probes = createProbes()
    schema = scratchSchema(cleanup.defer)
    prefix = scratchPrefix(cleanup.defer)
    a = await start()
    b = await start()
  })
  after(cleanup.run)

  test('a repeated idempotency_key sent to the other instance answers the original turn, and another body is a conflict', async () => {
    provider.enqueue({ text: 'once' })
    const body = { message: 'hello', idempotency_key: `idem-${randomBytes(4).toString('hex')}` }
    const first = await startTurn(a, body)
    const again = await startTurn(b, body)
    assert.equal(again.turn_id, first.turn_id)
    await finishedTurn(b, first.turn_id)
    assert.equal((await startTurn(b, body)).status, 'completed')
    assertProblem(await b.http('POST', '/v1/turns', { ...body, message: 'something else' }), 409, 'IDEMPOTENCY_CONFLICT')
    assert.equal(provider.requests.filter((r) => r.body.messages.some((m) => m.content === 'hello')).length, 1)
  })

  test('one idempotency_key sent to both instances at once starts one turn', async () => {
    provider.enqueue({ text: 'raced' })
    const body = { message: 'race', idempotency_key: `race-${randomBytes(4).toString('hex')}` }
    const answers = await Promise.all([a, b, a, b].map(async (g) => await g.http('POST', '/v1/turns', body)))
    for (const res of answers) assert.equal(res.status, 202, JSON.stringify(res.body))
    assert.equal(new Set(answers.map((r) => r.body.turn_id)).size, 1)
    await finishedTurn(a, answers[0]?.body.turn_id)
    assert.equal(provider.requests.filter((r) => r.body.messages.some((m) => m.content === 'race')).length, 1)
  })

  test('a receipt made on one instance verifies on the other', async () => {
    provider.enqueue({ toolCalls: [{ id: 'p1', name: 'probe', arguments: { label: 'x' } }] }, { text: 'done' })
    const done = await a.http('POST', '/v1/turns?wait=true', { message: 'probe it' })
    const call = done.body.tool_calls[0]
    const body = {
      receipt: call.receipt, turn_id: done.body.turn_id, call_id: call.call_id, tool: call.name,
      arguments: call.arguments, output: call.output
    }
    assert.deepEqual((await b.http('POST', '/v1/receipts/verify', body)).body, { valid: true })
    const forged = await b.http('POST', '/v1/receipts/verify', { ...body, output: 'forged' })
    assert.deepEqual(forged.body, { valid: false, reason: 'mismatch' })
  })

  test('the principal\'s running-turn cap holds across both instances and frees a slot when a turn ends', async () => {
    const first = gate()
    const second = gate()
    provider.enqueue({ text: 'one', gate: first.promise }, { text: 'two', gate: second.promise })
    const one = await startTurn(a, { message: 'one' })
    const two = await startTurn(b, { message: 'two' })
    assertProblem(await a.http('POST', '/v1/turns', { message: 'three' }), 429, 'TOO_MANY_TURNS')
    assertProblem(await b.http('POST', '/v1/turns', { message: 'three' }), 429, 'TOO_MANY_TURNS')
    first.open()
    await finishedTurn(a, one.turn_id)
    provider.enqueue({ text: 'three' })
    const three = await startTurn(b, { message: 'three' })
    second.open()
    await finishedTurn(b, two.turn_id)
    await finishedTurn(b, three.turn_id)
  })
})

test('a turn gives its cluster-wide slot back before its end is seen: the next turn starts on another instance at once', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  // Instance a reaches Redis through a link that delivers its slot connection's commands 300 ms
  // late: a slot given back after the turn's end is seen would still be held when b is asked.
  const link = await startSlowLink({ target: REDIS_URL, delayMs: 300, slowWhenSent: 'tollgate-turn-slots' })
  defer(async () => { await link.close() })
  const cluster = { provider, schema: scratchSchema(defer), prefix: scratchPrefix(defer) }
  const limits = { turns: { max_active_turns_per_principal: 1 } }
  const slowed = { ...cluster, redisUrl: link.url }
  const a = await startGateway({ provider, overrides: clusterOverrides(slowed, await scratchWorkspace(defer), limits) })
  defer(async () => { await a.close() })
  const b = await startGateway({ provider, overrides: clusterOverrides(cluster, await scratchWorkspace(defer), limits) })
  defer(async () => { await b.close() })
  provider.enqueue({ text: 'one' }, { text: 'two' })
  const one = await a.http('POST', '/v1/turns?wait=true', { message: 'one' })
  assert.equal(one.body.status, 'completed', JSON.stringify(one.body))
  const two = await b.http('POST', '/v1/turns', { message: 'two' })
  assert.equal(two.status, 202, JSON.stringify(two.body))
  assert.equal((await finishedTurn(b, two.body.turn_id)).final_text, 'two')
})

test('the running-turn slots of a SIGKILLed instance free themselves once its lease ends', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const cluster = { provider, schema: scratchSchema(defer), prefix: scratchPrefix(defer) }
  // The dead instance's turns are not resumed by the survivor (they would take the slots again).
  const limits = { turns: { max_active_turns_per_principal: 2 }, cluster: { lease_ms: 2000 }, shutdown: { running_turns: 'cancel' } }
  const doomed = await spawnGateway(defer, clusterOverrides(cluster, await scratchWorkspace(defer), limits))
  const survivor = await startGateway({ provider, overrides: clusterOverrides(cluster, await scratchWorkspace(defer), limits) })
  defer(async () => { await survivor.close() })
  provider.enqueue({ hang: true }, { hang: true })
  for (const message of ['one', 'two']) assert.equal((await doomed.http('POST', '/v1/turns', { message })).status, 202)
  await eventually(() => provider.open() === 2, { what: 'both turns to reach the provider' })
  await doomed.kill()
  assertProblem(await survivor.http('POST', '/v1/turns', { message: 'three' }), 429, 'TOO_MANY_TURNS')
  provider.enqueue({ text: 'three' })
  let started: { status: number, body: any } | undefined
  await eventually(async () => {
    started = await survivor.http('POST', '/v1/turns', { message: 'three' })
    return started.status === 202
  }, { what: 'a slot to free itself', timeoutMs: 10_000 })
  assert.equal((await finishedTurn(survivor, started?.body.turn_id)).final_text, 'three')
})

test('with Redis unreachable the per-principal cap falls back to the instance\'s own count', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const redis = await startPrivateRedis(defer)
  const cluster = { provider, schema: scratchSchema(defer), prefix: scratchPrefix(defer, redis.url), redisUrl: redis.url }
  const limits = { turns: { max_active_turns_per_principal: 1 } }
  const g = await startGateway({ provider, overrides: clusterOverrides(cluster, await scratchWorkspace(defer), limits) })
  defer(async () => { await g.close() })
  await redis.kill()
  const held = gate()
  provider.enqueue({ text: 'one', gate: held.promise })
  const one = await startTurn(g, { message: 'one' })
  assertProblem(await g.http('POST', '/v1/turns', { message: 'two' }), 429, 'TOO_MANY_TURNS')
  held.open()
  assert.equal((await finishedTurn(g, one.turn_id)).status, 'completed')
})
