import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { requestIdOf, startGateway, type TestGateway, type TestSocket } from '../helpers/gateway.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'

/** The owner, a principal with the same sub in another tenant, and another sub of the same tenant. */
interface Cast {
  g: TestGateway
  logs: LogCapture
  owner: string
  otherTenant: string
  otherSub: string
}

async function setup (t: TestContext): Promise<Cast> {
  const logs = captureLogs('info')
  const probes = createProbes()
  const g = await startGateway({ overrides: probeOverrides(jwtAuth()), tools: probes.tools, logger: logs.logger })
  t.after(() => g.close())
  return {
    g,
    logs,
    owner: await mintToken({ tenant: 'acme', sub: 'alice' }),
    otherTenant: await mintToken({ tenant: 'globex', sub: 'alice' }),
    otherSub: await mintToken({ tenant: 'acme', sub: 'bob' })
  }
}

async function socketOf (g: TestGateway, token: string): Promise<TestSocket> {
  return await g.socket({ protocols: ['tollgate.v1', `bearer.${token}`] })
}

/** A turn of the owner that stays running (its tool waits) until the test lets it go. */
async function runningTurn (c: Cast): Promise<{ ws: TestSocket, turnId: string, sessionId: string }> {
  c.g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'probe', arguments: { label: 'slow', ms: 60_000 } }] }, { text: 'done' })
  const ws = await socketOf(c.g, c.owner)
  const accepted = await ws.request({ type: 'turn.start', message: 'go', detach: true })
  await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'tool_call')
  return { ws, turnId: accepted.turn_id, sessionId: accepted.session_id }
}

function audits (logs: LogCapture, kind: string): Array<Record<string, any>> {
  return logs.lines().filter((l) => l.audit === kind)
}

test('another tenant reading a turn gets 404 TURN_NOT_FOUND and the attempt is audited', async (t) => {
  const c = await setup(t)
  const { turnId } = await runningTurn(c)
  for (const token of [c.otherTenant, c.otherSub]) {
    const res = await c.g.http('GET', `/v1/turns/${turnId}`, undefined, bearer(token))
    assert.equal(res.status, 404)
    assert.equal(res.body.code, 'TURN_NOT_FOUND')
  }
  const records = audits(c.logs, 'cross_principal_turn')
  assert.deepEqual(records.map((r) => r.principal), ['globex/alice', 'acme/bob'])
  assert.ok(records.every((r) => r.turn_id === turnId))
  assert.equal((await c.g.http('GET', `/v1/turns/${turnId}`, undefined, bearer(c.owner))).status, 200)
})

test('another tenant replaying a turn\'s events gets 404 TURN_NOT_FOUND', async (t) => {
  const c = await setup(t)
  const { turnId } = await runningTurn(c)
  const res = await c.g.http('GET', `/v1/turns/${turnId}/events`, undefined, bearer(c.otherTenant))
  assert.equal(res.status, 404)
  assert.equal(res.body.code, 'TURN_NOT_FOUND')
  assert.equal(audits(c.logs, 'cross_principal_turn').length, 1)
})

test('another tenant cannot cancel a turn over HTTP and the turn keeps running', async (t) => {
  const c = await setup(t)
  const { turnId } = await runningTurn(c)
  const res = await c.g.http('DELETE', `/v1/turns/${turnId}`, undefined, bearer(c.otherTenant))
  assert.equal(res.status, 404)
  assert.equal(res.body.code, 'TURN_NOT_FOUND')
  assert.equal(audits(c.logs, 'cross_principal_turn').length, 1)
  const turn = await c.g.http('GET', `/v1/turns/${turnId}`, undefined, bearer(c.owner))
  assert.equal(turn.body.status, 'running')
})

test('another tenant cannot subscribe to or cancel a turn over the socket', async (t) => {
  const c = await setup(t)
  const { turnId } = await runningTurn(c)
  const intruder = await socketOf(c.g, c.otherTenant)
  const subscribed = await intruder.request({ type: 'subscribe', turn_id: turnId })
  assert.deepEqual([subscribed.type, subscribed.code], ['error', 'TURN_NOT_FOUND'])
  const cancelled = await intruder.request({ type: 'cancel', turn_id: turnId })
  assert.deepEqual([cancelled.type, cancelled.code], ['error', 'TURN_NOT_FOUND'])
  assert.equal(intruder.events(turnId).length, 0)
  assert.equal(audits(c.logs, 'cross_principal_turn').length, 2)
  const turn = await c.g.http('GET', `/v1/turns/${turnId}`, undefined, bearer(c.owner))
  assert.equal(turn.body.status, 'running')
})

test('another principal of the tenant cannot read or follow a session, and the attempts are audited', async (t) => {
  const c = await setup(t)
  const { sessionId } = await runningTurn(c)
  const res = await c.g.http('GET', `/v1/sessions/${sessionId}`, undefined, bearer(c.otherSub))
  assert.equal(res.status, 404)
  assert.equal(res.body.code, 'SESSION_NOT_FOUND')
  const intruder = await socketOf(c.g, c.otherSub)
  const subscribed = await intruder.request({ type: 'subscribe', session_id: sessionId })
  assert.deepEqual([subscribed.type, subscribed.code], ['error', 'SESSION_NOT_FOUND'])
  assert.deepEqual(audits(c.logs, 'cross_principal_session').map((r) => r.principal), ['acme/bob', 'acme/bob'])
})

test('another tenant naming a session id finds no session of its own: 404, nothing of the owner\'s is touched', async (t) => {
  const c = await setup(t)
  const { sessionId } = await runningTurn(c)
  const res = await c.g.http('GET', `/v1/sessions/${sessionId}`, undefined, bearer(c.otherTenant))
  assert.deepEqual([res.status, res.body.code], [404, 'SESSION_NOT_FOUND'])
  const intruder = await socketOf(c.g, c.otherTenant)
  const subscribed = await intruder.request({ type: 'subscribe', session_id: sessionId })
  assert.deepEqual([subscribed.type, subscribed.code], ['error', 'SESSION_NOT_FOUND'])
  assert.equal(audits(c.logs, 'cross_principal_session').length, 0, 'the id names no record of another principal in this tenant')
})

test('another principal of the tenant starting a turn in a session gets 403 FORBIDDEN and the attempt is audited', async (t) => {
  const c = await setup(t)
  c.g.provider.enqueue({ text: 'first' })
  const first = await c.g.http('POST', '/v1/turns?wait=true', { message: 'hi', session_id: 'shared-name' }, bearer(c.owner))
  assert.equal(first.status, 200)
  const res = await c.g.http('POST', '/v1/turns', { message: 'let me in', session_id: 'shared-name' }, bearer(c.otherSub))
  assert.equal(res.status, 403)
  assert.equal(res.body.code, 'FORBIDDEN')
  const [record] = audits(c.logs, 'cross_principal_session')
  assert.deepEqual([record?.principal, record?.session_id], ['acme/bob', 'shared-name'])
  assert.equal(c.g.provider.requests.length, 1)
})

test('another principal\'s session answers the same 403 FORBIDDEN while a turn runs in it and once it is idle', async (t) => {
  const c = await setup(t)
  const { ws, turnId, sessionId } = await runningTurn(c)
  const intruder = await socketOf(c.g, c.otherSub)
  const attempt = async (): Promise<unknown[]> => {
    const http = await c.g.http('POST', '/v1/turns', { message: 'let me in', session_id: sessionId }, bearer(c.otherSub))
    const frame = await intruder.request({ type: 'turn.start', message: 'let me in', session_id: sessionId })
    return [http.status, http.body, frame.type, frame.code, frame.message]
  }
  const whileBusy = await attempt()
  assert.deepEqual(whileBusy.slice(0, 1), [403])
  assert.equal((whileBusy[1] as { code: string }).code, 'FORBIDDEN')
  const own = await c.g.http('POST', '/v1/turns', { message: 'me again', session_id: sessionId }, bearer(c.owner))
  assert.equal(own.body.code, 'SESSION_BUSY', 'the owner still learns that its own session is busy')

  await ws.request({ type: 'cancel', turn_id: turnId })
  await ws.waitForTerminal(turnId)
  assert.deepEqual(await attempt(), whileBusy)
  assert.equal(audits(c.logs, 'cross_principal_session').length, 4)
})

test('another tenant cannot answer an approval, over REST or the socket, and the owner still can', async (t) => {
  const c = await setup(t)
  c.g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'x' } }] }, { text: 'done' })
  const ws = await socketOf(c.g, c.owner)
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const requested = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  const requestId = requestIdOf(requested)

  const rest = await c.g.http('POST', `/v1/approvals/${requestId}`, { decision: 'yes' }, bearer(c.otherTenant))
  assert.equal(rest.status, 404)
  assert.equal(rest.body.code, 'APPROVAL_NOT_FOUND')
  const intruder = await socketOf(c.g, c.otherSub)
  const frame = await intruder.request({ type: 'approval.respond', request_id: requestId, decision: 'yes' })
  assert.deepEqual([frame.type, frame.code], ['error', 'APPROVAL_NOT_FOUND'])
  assert.deepEqual(audits(c.logs, 'cross_principal_approval').map((r) => r.principal), ['globex/alice', 'acme/bob'])

  const ack = await ws.request({ type: 'approval.respond', request_id: requestId, decision: 'no' })
  assert.equal(ack.type, 'approval.accepted')
  const events = await ws.waitForTerminal(accepted.turn_id)
  const resolved = events.find((e) => e.event.kind === 'approval.resolved')
  assert.equal(resolved?.event.kind === 'approval.resolved' && resolved.event.decision, 'no')
})

test('a turn cannot name another principal\'s socket as its owner', async (t) => {
  const c = await setup(t)
  const victim = await socketOf(c.g, c.owner)
  const welcome = await victim.request({ type: 'hello' })
  const res = await c.g.http('POST', '/v1/turns', { message: 'hi', owner_connection: welcome.connection_id }, bearer(c.otherTenant))
  assert.equal(res.body.code, 'CONNECTION_NOT_FOUND')
  const [record] = audits(c.logs, 'cross_principal_connection')
  assert.deepEqual([record?.principal, record?.connection_id], ['globex/alice', welcome.connection_id])
})

test('events and approval requests of a turn reach no socket of another principal', async (t) => {
  const c = await setup(t)
  const intruder = await socketOf(c.g, c.otherTenant)
  c.g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'x' } }] }, { text: 'done' })
  const ws = await socketOf(c.g, c.owner)
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const requested = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  const requestId = requestIdOf(requested)
  await ws.request({ type: 'approval.respond', request_id: requestId, decision: 'no' })
  await ws.waitForTerminal(accepted.turn_id)
  // The ping round trip proves the intruder's socket was live and drained while the turn ran.
  assert.equal((await intruder.request({ type: 'ping' })).type, 'pong')
  assert.equal(intruder.frames.filter((f) => f.type === 'event').length, 0)
})

test('a socket whose token lacks approvals:answer cannot answer: its turn waits for a principal who can', async (t) => {
  const c = await setup(t)
  c.g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'x' } }] }, { text: 'ok' })
  const watcher = await socketOf(c.g, await mintToken({ tenant: 'acme', sub: 'alice', scopes: ['turns:read', 'turns:write'] }))
  const accepted = await watcher.request({ type: 'turn.start', message: 'go' })
  const asked = await watcher.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  const refused = await watcher.request({ type: 'approval.respond', request_id: requestIdOf(asked), decision: 'yes' })
  assert.deepEqual([refused.type, refused.code], ['error', 'FORBIDDEN'])
  const answer = await c.g.http('POST', `/v1/approvals/${requestIdOf(asked)}`, { decision: 'yes' }, bearer(c.owner))
  assert.equal(answer.status, 200)
  const events = await watcher.waitForTerminal(accepted.turn_id)
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.ok(result?.kind === 'tool_result' && result.status === 'ok')
})

test('with on_no_backchannel = "deny", a turn watched only by a socket lacking approvals:answer is auto-denied at once', async (t) => {
  const logs = captureLogs('info')
  const probes = createProbes()
  const g = await startGateway({ overrides: probeOverrides({ ...jwtAuth(), agents: { default: { on_no_backchannel: 'deny' } } }), tools: probes.tools, logger: logs.logger })
  t.after(() => g.close())
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'x' } }] }, { text: 'ok' })
  const watcher = await socketOf(g, await mintToken({ tenant: 'acme', sub: 'alice', scopes: ['turns:read', 'turns:write'] }))
  const accepted = await watcher.request({ type: 'turn.start', message: 'go' })
  const events = await watcher.waitForTerminal(accepted.turn_id)
  assert.equal(events.some((e) => e.event.kind === 'approval.requested'), false)
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.ok(result?.kind === 'tool_result' && result.status === 'denied')
  assert.match(result.output, /no operator decision was available/)
})
