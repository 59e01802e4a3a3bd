import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { EventEnvelope } from '../../schemas/events.js'
import { requestIdOf, startGateway, type TestGateway, type TestSocket } from '../helpers/gateway.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'
import { MemoryStore } from '../../src/store/memory.js'

const LOCAL = 'local/local'
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

interface Setup {
  g: TestGateway
  logs: LogCapture
  store: MemoryStore
}

async function setup (t: { after: (fn: () => Promise<void>) => void }, extra: Record<string, unknown> = {}): Promise<Setup> {
  const logs = captureLogs('info')
  const store = new MemoryStore()
  const g = await startGateway({ logger: logs.logger, store, tools: createProbes().tools, overrides: probeOverrides(extra) })
  t.after(async () => { await g.close() })
  return { g, logs, store }
}

const risky = { id: 'c1', name: 'risky', arguments: { label: 'x' } }

async function askOverWs (g: TestGateway): Promise<{ ws: TestSocket, connectionId: string, turnId: string, requestId: string }> {
  g.provider.enqueue({ toolCalls: [risky] }, { text: 'ok' })
  const ws = await g.socket()
  const welcome = await ws.request({ type: 'hello' })
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const asked = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  assert.ok(asked.event.kind === 'approval.requested')
  return { ws, connectionId: welcome.connection_id, turnId: accepted.turn_id, requestId: asked.event.request_id }
}

/** The turn's audit as the API shows it, checked against the store's copy and the audit log line. */
async function audited (s: Setup, turnId: string): Promise<Record<string, any>> {
  const turn = await s.g.http('GET', `/v1/turns/${turnId}`)
  assert.equal(turn.body.approvals.length, 1)
  const entry = turn.body.approvals[0]
  const stored = await s.store.getTurn(turnId)
  assert.deepEqual(stored?.approvals, turn.body.approvals, 'the audit is persisted with the turn record')
  const lines = s.logs.lines().filter((l) => l.audit === 'approval_decision' && l.turn_id === turnId)
  assert.equal(lines.length, 1)
  const line = lines[0] as Record<string, any>
  assert.deepEqual(
    [line.level, line.call_id, line.tool, line.decision, line.decided_by, line.approval_channel, line.principal],
    [30, entry.call_id, entry.tool, entry.decision, entry.decided_by, entry.channel, entry.principal]
  )
  assert.equal(line.request_id ?? `auto-${String(line.call_id)}`, entry.request_id)
  assert.match(entry.timestamp, TIMESTAMP)
  assert.equal(entry.arguments_summary, 'label: x')
  return entry
}

test('yes over the WebSocket is audited with the answering principal and the websocket channel', async (t) => {
  const s = await setup(t)
  const { ws, turnId, requestId } = await askOverWs(s.g)
  await ws.request({ type: 'approval.respond', request_id: requestId, decision: 'yes' })
  await ws.waitForTerminal(turnId)
  const entry = await audited(s, turnId)
  assert.deepEqual(
    [entry.request_id, entry.decision, entry.decided_by, entry.channel, entry.principal, entry.tool],
    [requestId, 'yes', `ws:${LOCAL}`, 'websocket', LOCAL, 'risky']
  )
  assert.equal(entry.call_id, (await s.g.http('GET', `/v1/turns/${turnId}`)).body.tool_calls[0].call_id)
})

test('no through the REST fallback is audited with the rest channel and the answering principal', async (t) => {
  const s = await setup(t)
  const { ws, turnId, requestId } = await askOverWs(s.g)
  const answer = await s.g.http('POST', `/v1/approvals/${requestId}`, { decision: 'no' })
  assert.equal(answer.status, 200)
  await ws.waitForTerminal(turnId)
  const entry = await audited(s, turnId)
  assert.deepEqual([entry.decision, entry.decided_by, entry.channel, entry.principal], ['no', 'rest:local/local', 'rest', LOCAL])
})

test('always is audited as always', async (t) => {
  const s = await setup(t)
  const { ws, turnId, requestId } = await askOverWs(s.g)
  await ws.request({ type: 'approval.respond', request_id: requestId, decision: 'always' })
  await ws.waitForTerminal(turnId)
  const entry = await audited(s, turnId)
  assert.deepEqual([entry.decision, entry.decided_by, entry.principal], ['always', `ws:${LOCAL}`, LOCAL])
})

test('edit is audited as edit, without the replacement text', async (t) => {
  const s = await setup(t)
  const { ws, turnId, requestId } = await askOverWs(s.g)
  await ws.request({ type: 'approval.respond', request_id: requestId, decision: 'edit', replacement: 'replacement text' })
  await ws.waitForTerminal(turnId)
  const entry = await audited(s, turnId)
  assert.deepEqual([entry.decision, entry.channel, entry.principal], ['edit', 'websocket', LOCAL])
  assert.doesNotMatch(JSON.stringify(entry), /replacement text/)
})

test('an auto-deny is audited as the runtime\'s decision, never a person\'s', async (t) => {
  const s = await setup(t)
  s.g.provider.enqueue({ toolCalls: [risky] }, { text: 'ok' })
  const res = await s.g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  const entry = await audited(s, res.body.turn_id)
  assert.deepEqual(
    [entry.request_id, entry.decision, entry.decided_by, entry.channel, entry.principal],
    [`auto-${String(res.body.tool_calls[0].call_id)}`, 'auto-deny', 'runtime', 'runtime', 'runtime']
  )
})

test('an expired request is audited as expired, decided by the runtime', async (t) => {
  const s = await setup(t, { turns: { approval_timeout_ms: 200 } })
  const { ws, turnId, requestId } = await askOverWs(s.g)
  await ws.waitForTerminal(turnId)
  const entry = await audited(s, turnId)
  assert.deepEqual([entry.request_id, entry.decision, entry.decided_by, entry.channel, entry.principal], [requestId, 'expired', 'runtime', 'runtime', 'runtime'])
})

test('a request cut short by cancelling the turn is audited as cancelled and persisted with the cancelled turn', async (t) => {
  const s = await setup(t)
  const { ws, turnId, requestId } = await askOverWs(s.g)
  await ws.request({ type: 'cancel', turn_id: turnId })
  await ws.waitForTerminal(turnId)
  const entry = await audited(s, turnId)
  assert.deepEqual([entry.request_id, entry.decision, entry.decided_by, entry.principal], [requestId, 'cancelled', 'runtime', 'runtime'])
  assert.equal((await s.store.getTurn(turnId))?.status, 'cancelled')
})

test('several decisions in one turn are all audited, in the order they were made', async (t) => {
  const s = await setup(t)
  s.g.provider.enqueue({ toolCalls: [risky, { id: 'c2', name: 'risky', arguments: { label: 'y' } }] }, { text: 'ok' })
  const ws = await s.g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  // An answer is acknowledged once its decision is stored: the next request may have come before.
  const asked = (): EventEnvelope[] => ws.events(accepted.turn_id).filter((e) => e.event.kind === 'approval.requested')
  for (const [n, decision] of ['no', 'yes'].entries()) {
    await ws.waitForEvent(accepted.turn_id, () => asked().length > n)
    await ws.request({ type: 'approval.respond', request_id: requestIdOf(asked()[n] as EventEnvelope), decision })
  }
  await ws.waitForTerminal(accepted.turn_id)
  const turn = await s.g.http('GET', `/v1/turns/${accepted.turn_id}`)
  assert.deepEqual(turn.body.approvals.map((a: { decision: string, arguments_summary: string }) => [a.decision, a.arguments_summary]), [['no', 'label: x'], ['yes', 'label: y']])
  assert.deepEqual((await s.store.getTurn(accepted.turn_id))?.approvals, turn.body.approvals)
  assert.equal(s.logs.lines().filter((l) => l.audit === 'approval_decision').length, 2)
})

test('with JWT auth the audit names the tenant/sub that answered', async (t) => {
  const logs = captureLogs('info')
  const g = await startGateway({ logger: logs.logger, tools: createProbes().tools, overrides: probeOverrides(jwtAuth()) })
  t.after(async () => { await g.close() })
  const token = await mintToken({ tenant: 'acme', sub: 'alice' })
  g.provider.enqueue({ toolCalls: [risky] }, { text: 'ok' })
  const ws = await g.socket({ protocols: ['tollgate.v1', `bearer.${token}`] })
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const asked = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  assert.ok(asked.event.kind === 'approval.requested')
  const answer = await g.http('POST', `/v1/approvals/${asked.event.request_id}`, { decision: 'yes' }, bearer(token))
  assert.equal(answer.status, 200)
  await ws.waitForTerminal(accepted.turn_id)
  const turn = await g.http('GET', `/v1/turns/${accepted.turn_id}`, undefined, bearer(token))
  assert.deepEqual([turn.body.approvals[0].principal, turn.body.approvals[0].decided_by, turn.body.approvals[0].channel], ['acme/alice', 'rest:acme/alice', 'rest'])
  const line = logs.lines().find((l) => l.audit === 'approval_decision')
  assert.deepEqual([line?.principal, line?.decision], ['acme/alice', 'yes'])
})

test('with JWT auth an answer over the WebSocket names the person in decided_by, as REST does, and keeps the surface in channel', async (t) => {
  const logs = captureLogs('info')
  const g = await startGateway({ logger: logs.logger, tools: createProbes().tools, overrides: probeOverrides(jwtAuth()) })
  t.after(async () => { await g.close() })
  const token = await mintToken({ tenant: 'acme', sub: 'alice' })
  g.provider.enqueue({ toolCalls: [risky] }, { text: 'ok' })
  const ws = await g.socket({ protocols: ['tollgate.v1', `bearer.${token}`] })
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const asked = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  assert.ok(asked.event.kind === 'approval.requested')
  await ws.request({ type: 'approval.respond', request_id: asked.event.request_id, decision: 'yes' })
  const events = await ws.waitForTerminal(accepted.turn_id)
  const resolved = events.find((e) => e.event.kind === 'approval.resolved')?.event
  assert.deepEqual(resolved, { kind: 'approval.resolved', request_id: asked.event.request_id, call_id: asked.event.call_id, decision: 'yes', decided_by: 'ws:acme/alice' })
  const turn = await g.http('GET', `/v1/turns/${accepted.turn_id}`, undefined, bearer(token))
  assert.deepEqual([turn.body.approvals[0].principal, turn.body.approvals[0].decided_by, turn.body.approvals[0].channel], ['acme/alice', 'ws:acme/alice', 'websocket'])
  const line = logs.lines().find((l) => l.audit === 'approval_decision')
  assert.deepEqual([line?.principal, line?.decided_by, line?.approval_channel], ['acme/alice', 'ws:acme/alice', 'websocket'])
})
