import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js'
import { assertSeqContiguous, requestIdOf, shape, startGateway, type TestSocket } from '../helpers/gateway.js'
import { clusterOverrides, scratchWorkspace, spawnGateway, type GatewayProcess } from '../helpers/cluster.js'
import { cleanupStack, deferrer, scratchPrefix, scratchSchema, type Defer } from '../helpers/services.js'

/** What both kinds of instance offer a test. */
interface Instance {
  http: (method: string, path: string, body?: unknown) => Promise<{ status: number, body: any }>
  socket: () => Promise<TestSocket>
}

interface Cluster {
  provider: FakeProvider
  /** Starts an instance in a child process (the one a test can SIGKILL). */
  spawn: (extra?: unknown) => Promise<GatewayProcess>
  /** Starts an instance in the test process itself: a second process, at the cost of none. */
  local: (extra?: unknown) => Promise<Instance & { instanceId: string }>
}

/** Instances share one PostgreSQL schema and Redis key prefix of their own; `defer` cleans up. */
async function cluster (defer: Defer): Promise<Cluster> {
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const schema = scratchSchema(defer)
  const prefix = scratchPrefix(defer)
  return {
    provider,
    spawn: async (extra = {}) => await spawnGateway(
      defer, clusterOverrides({ provider, schema, prefix }, await scratchWorkspace(defer), extra)
    ),
    local: async (extra = {}) => {
      const g = await startGateway({
        provider, overrides: clusterOverrides({ provider, schema, prefix }, await scratchWorkspace(defer), extra)
      })
      defer(async () => { await g.close() })
      return { http: g.http, socket: g.socket, instanceId: g.gateway.instanceId }
    }
  }
}

const FULL_RISK = { risk_profiles: { default: { level: 'full' } } }

async function runTurn (gw: Instance, body: Record<string, unknown>): Promise<any> {
  const ws = await gw.socket()
  const accepted = await ws.request({ type: 'turn.start', ...body })
  assert.equal(accepted.type, 'turn.accepted', JSON.stringify(accepted))
  await ws.waitForTerminal(accepted.turn_id, 10_000)
  ws.close()
  return (await gw.http('GET', `/v1/turns/${accepted.turn_id as string}`)).body
}

async function subscribe (ws: TestSocket, turnId: string): Promise<void> {
  const answer = await ws.request({ type: 'subscribe', turn_id: turnId, after_seq: 0 })
  assert.equal(answer.type, 'subscribed', JSON.stringify(answer))
}

describe('two instances in two processes, sharing PostgreSQL and Redis', () => {
  const cleanup = cleanupStack()
  let c: Cluster
  let a: GatewayProcess
  let b: Instance
  before(async () => {
    c = await cluster(cleanup.defer)
    // A control timeout longer than any test's: only the peers' answers can end a wait early.
    const slowTimeout = { cluster: { control_timeout_ms: 60_000 } }
    ;[a, b] = await Promise.all([c.spawn(slowTimeout), c.local(slowTimeout)])
  })
  after(cleanup.run)

  test('instance B reads a turn running on instance A with the tool calls and iterations it made so far, from its event log', async () => {
    c.provider.enqueue({ toolCalls: [{ id: 'r1', name: 'file_read', arguments: { path: 'nothing-here.txt' } }] }, { hang: true })
    const owner = await a.socket()
    const accepted = await owner.request({ type: 'turn.start', message: 'read, then wait', interactive: false })
    await owner.waitForEvent(accepted.turn_id, (e) => e.kind === 'iteration' && e.n === 2, 10_000)
    const live = owner.events(accepted.turn_id)
    const call = live.find((e) => e.event.kind === 'tool_call')?.event
    const result = live.find((e) => e.event.kind === 'tool_result')?.event
    assert.ok(call?.kind === 'tool_call' && result?.kind === 'tool_result')
    const turn = await b.http('GET', `/v1/turns/${accepted.turn_id as string}`)
    assert.equal(turn.status, 200)
    assert.deepEqual([turn.body.status, turn.body.iterations, turn.body.last_seq], ['running', 2, live.length])
    assert.deepEqual(turn.body.tool_calls, [{
      call_id: call.call_id, provider_call_id: 'r1', iteration: 1, index: 0, name: 'file_read', arguments: call.arguments,
      status: result.status, success: result.success, output: result.output, error: result.error, duration_ms: result.duration_ms
    }])
    // The same as instance A's own, in-memory record.
    assert.deepEqual((await a.http('GET', `/v1/turns/${accepted.turn_id as string}`)).body.tool_calls, turn.body.tool_calls)
    await b.http('DELETE', `/v1/turns/${accepted.turn_id as string}`)
    await owner.waitForTerminal(accepted.turn_id, 10_000)
  })

  test('a client on instance B follows a turn running on instance A, answers its approval and sees it complete', async () => {
    c.provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'out.txt', content: 'from B' } }] }, { text: 'Wrote it.' })
    const owner = await a.socket()
    const accepted = await owner.request({ type: 'turn.start', message: 'write out.txt' })
    const watcher = await b.socket()
    await subscribe(watcher, accepted.turn_id)
    const asked = await watcher.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested', 10_000)
    const requestId = requestIdOf(asked)
    const answer = await watcher.request({ type: 'approval.respond', request_id: requestId, decision: 'yes' })
    assert.equal(answer.type, 'approval.accepted', JSON.stringify(answer))
    assert.equal(answer.turn_id, accepted.turn_id)

    const seenOnB = await watcher.waitForTerminal(accepted.turn_id, 10_000)
    const seenOnA = await owner.waitForTerminal(accepted.turn_id, 10_000)
    assertSeqContiguous(seenOnB)
    assert.deepEqual(shape(seenOnB), ['turn.started', 'iteration', 'approval.requested:file_write', 'approval.resolved:yes', 'tool_call:file_write', 'tool_result:file_write:ok', 'iteration', 'turn.completed'])
    assert.deepEqual(seenOnB.map((e) => e.seq), seenOnA.map((e) => e.seq))
    const turn = await b.http('GET', `/v1/turns/${accepted.turn_id as string}`)
    assert.equal(turn.body.status, 'completed')
    assert.deepEqual(turn.body.approvals.map((e: { decision: string, channel: string }) => [e.decision, e.channel]), [['yes', 'websocket']])
  })

  test('a second answer on instance B to an approval already settled on instance A is refused as already resolved', async () => {
    c.provider.enqueue({ toolCalls: [{ id: 'w2', name: 'file_write', arguments: { path: 'twice.txt', content: 'x' } }] }, { text: 'Done.' })
    const owner = await a.socket()
    const accepted = await owner.request({ type: 'turn.start', message: 'write twice.txt' })
    const asked = await owner.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested', 10_000)
    const requestId = requestIdOf(asked)
    assert.equal((await owner.request({ type: 'approval.respond', request_id: requestId, decision: 'no' })).type, 'approval.accepted')
    const late = await b.http('POST', `/v1/approvals/${requestId}`, { decision: 'yes' })
    assert.equal(late.status, 409)
    assert.equal(late.body.code, 'APPROVAL_ALREADY_RESOLVED')
    const events = await owner.waitForTerminal(accepted.turn_id, 10_000)
    assert.ok(shape(events).includes('approval.resolved:no'))
  })

  test('a client on instance B cancels a turn running on instance A', async () => {
    c.provider.enqueue({ hang: true })
    const started = await a.http('POST', '/v1/turns', { message: 'never answered', detach: true })
    assert.equal(started.status, 202)
    const cancelled = await b.http('DELETE', `/v1/turns/${started.body.turn_id as string}`)
    assert.equal(cancelled.status, 200)
    assert.deepEqual(cancelled.body, { turn_id: started.body.turn_id, status: 'cancelled' })
    const events = await b.http('GET', `/v1/turns/${started.body.turn_id as string}/events`)
    assert.equal(events.body.events.at(-1).event.kind, 'turn.cancelled')
    assert.equal((await a.http('GET', `/v1/turns/${started.body.turn_id as string}`)).body.status, 'cancelled')
  })

  test('a session whose turn runs on instance A is busy for a new turn started on instance B', async () => {
    c.provider.enqueue({ text: 'Session ready.' })
    const first = await runTurn(a, { message: 'open a session' })
    c.provider.enqueue({ hang: true })
    const running = await a.http('POST', '/v1/turns', { session_id: first.session_id, message: 'hang', detach: true })
    assert.equal(running.status, 202)
    const refused = await b.http('POST', '/v1/turns', { session_id: first.session_id, message: 'me too' })
    assert.equal(refused.status, 409)
    assert.equal(refused.body.code, 'SESSION_BUSY')
    assert.equal((await b.http('DELETE', `/v1/turns/${running.body.turn_id as string}`)).body.status, 'cancelled')
  })

  test('an approval answer for a request no instance holds fails with APPROVAL_NOT_FOUND once every live instance declined', { timeout: 20_000 }, async () => {
    const answer = await b.http('POST', '/v1/approvals/apr_unknown', { decision: 'yes' })
    assert.equal(answer.status, 404)
    assert.equal(answer.body.code, 'APPROVAL_NOT_FOUND')
  })

  test('a detached turn on instance A asks for approval when its only watcher is a session subscriber on instance B', async () => {
    c.provider.enqueue({ text: 'Ready.' })
    const first = await runTurn(a, { message: 'start a session' })
    const watcher = await b.socket()
    const subscribed = await watcher.request({ type: 'subscribe', session_id: first.session_id })
    assert.equal(subscribed.type, 'subscribed')

    c.provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'b.txt', content: 'x' } }] }, { text: 'Done.' })
    const started = await a.http('POST', '/v1/turns', { session_id: first.session_id, message: 'write b.txt', detach: true })
    const asked = await watcher.waitForEvent(started.body.turn_id, (e) => e.kind === 'approval.requested', 10_000)
    const requestId = requestIdOf(asked)
    const answer = await b.http('POST', `/v1/approvals/${requestId}`, { decision: 'yes' })
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const events = await watcher.waitForTerminal(started.body.turn_id, 10_000)
    assert.deepEqual(shape(events).slice(-4), ['tool_call:file_write', 'tool_result:file_write:ok', 'iteration', 'turn.completed'])
  })

  test('an instance that starts while another runs a turn leaves that turn alone', async () => {
    c.provider.enqueue({ text: 'A slow answer.', delayMs: 2500 })
    const owner = await a.socket()
    const accepted = await owner.request({ type: 'turn.start', message: 'take your time' })
    const late = await c.local()
    const events = await owner.waitForTerminal(accepted.turn_id, 15_000)
    assert.equal(events.at(-1)?.event.kind, 'turn.completed')
    assert.equal((await late.http('GET', `/v1/turns/${accepted.turn_id as string}`)).body.status, 'completed')
  })
})

test('a turn on an instance that was SIGKILLed ends interrupted on a surviving instance, with history intact', async (t) => {
  const c = await cluster(deferrer(t))
  // Turns that do not outlive their instance (durable turns resume instead: durable-cluster.test.ts).
  const cancel = { ...FULL_RISK, shutdown: { running_turns: 'cancel' } }
  const [a, b] = await Promise.all([c.spawn(cancel), c.local(cancel)])
  c.provider.enqueue({ text: 'First answer.' })
  const first = await runTurn(a, { message: 'first question' })
  c.provider.enqueue({ toolCalls: [{ id: 's1', name: 'shell', arguments: { command: 'sleep 8' } }] })
  const owner = await a.socket()
  const accepted = await owner.request({ type: 'turn.start', session_id: first.session_id, message: 'run something slow' })
  const watcher = await b.socket()
  await subscribe(watcher, accepted.turn_id)
  await watcher.waitForEvent(accepted.turn_id, (e) => e.kind === 'tool_call', 10_000)
  await a.kill()

  const events = await watcher.waitForTerminal(accepted.turn_id, 15_000)
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:shell', 'tool_result:shell:interrupted', 'turn.failed'])
  const ended = events.at(-1)?.event
  assert.equal(ended?.kind === 'turn.failed' && ended.code, 'INTERRUPTED')
  const turn = await b.http('GET', `/v1/turns/${accepted.turn_id as string}`)
  assert.equal(turn.body.status, 'interrupted')
  assert.deepEqual(turn.body.tool_calls.map((r: { name: string, status: string }) => [r.name, r.status]), [['shell', 'interrupted']])
  const session = await b.http('GET', `/v1/sessions/${first.session_id as string}`)
  assert.deepEqual(session.body.history.map((m: { content: string }) => m.content), ['first question', 'First answer.'])
})

test('an instance restarted under the same instance_id ends its own unfinished turn at start', async (t) => {
  const c = await cluster(deferrer(t))
  // A long lease: only the restart itself, not lease expiry, can end the turn during this test.
  const stable = { cluster: { instance_id: `gw-${randomBytes(4).toString('hex')}`, lease_ms: 120_000 }, shutdown: { running_turns: 'cancel' } }
  const a = await c.spawn(stable)
  c.provider.enqueue({ hang: true })
  const started = await a.http('POST', '/v1/turns', { message: 'hang', detach: true })
  assert.equal(started.status, 202)
  await a.kill()
  const again = await c.local(stable)
  assert.equal(again.instanceId, a.instanceId)
  const turn = await again.http('GET', `/v1/turns/${started.body.turn_id as string}`)
  assert.equal(turn.body.status, 'interrupted')
  const events = await again.http('GET', `/v1/turns/${started.body.turn_id as string}/events`)
  assert.equal(events.body.events.at(-1).event.code, 'INTERRUPTED')
  assertSeqContiguous(events.body.events)
})
