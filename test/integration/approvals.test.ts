import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { requestIdOf, shape, type TestSocket } from '../helpers/gateway.js'
import { startProbeGateway } from '../helpers/tools.js'
import type { EventEnvelope } from '../../schemas/events.js'

const RUNTIME_DENIAL = "Tool call not executed: 'risky' requires approval and no operator decision was available, so the runtime denied it by policy. This was not a user's decision."

const risky = (id: string, label: string): { id: string, name: string, arguments: Record<string, unknown> } => ({ id, name: 'risky', arguments: { label } })

async function startAndAwaitApproval (
  ws: TestSocket, body: Record<string, unknown> = {}
): Promise<{ turnId: string, requestId: string, request: EventEnvelope }> {
  const accepted = await ws.request({ type: 'turn.start', message: 'go', ...body })
  const request = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  return { turnId: accepted.turn_id, requestId: requestIdOf(request), request }
}

test('approving with yes runs the tool once and audits the decision with its channel', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'done' })
  const ws = await g.socket()
  await ws.request({ type: 'hello' })
  const { turnId, requestId, request } = await startAndAwaitApproval(ws)
  assert.equal(request.event.kind === 'approval.requested' && request.event.summary, 'label: x')
  const ack = await ws.request({ type: 'approval.respond', request_id: requestId, decision: 'yes' })
  assert.deepEqual([ack.type, ack.turn_id, ack.decision], ['approval.accepted', turnId, 'yes'])
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration', 'approval.requested:risky', 'approval.resolved:yes',
    'tool_call:risky', 'tool_result:risky:ok', 'iteration', 'turn.completed'
  ])
  assert.equal(probes.runs.length, 1)
  const turn = await g.http('GET', `/v1/turns/${turnId}`)
  assert.equal(turn.body.approvals.length, 1)
  assert.deepEqual(
    [turn.body.approvals[0].decision, turn.body.approvals[0].decided_by, turn.body.approvals[0].channel, turn.body.approvals[0].tool],
    ['yes', 'ws:local/local', 'websocket', 'risky']
  )
})

test('answering no denies the call as the user\'s decision and the tool never runs', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'ok, not doing it' })
  const ws = await g.socket()
  const { turnId, requestId } = await startAndAwaitApproval(ws)
  await ws.request({ type: 'approval.respond', request_id: requestId, decision: 'no' })
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration', 'approval.requested:risky', 'approval.resolved:no',
    'tool_call:risky', 'tool_result:risky:denied', 'iteration', 'turn.completed'
  ])
  assert.equal(probes.runs.length, 0)
  const toolMessage = g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')
  assert.equal(toolMessage?.content, 'Denied by user.')
})

test('always runs the tool and allowlists it for the rest of the session only', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'first')] }, { text: 'one' }, { toolCalls: [risky('c2', 'second')] }, { text: 'two' }, { toolCalls: [risky('c3', 'third')] })
  const ws = await g.socket()
  const first = await startAndAwaitApproval(ws, { session_id: 'sess-always' })
  await ws.request({ type: 'approval.respond', request_id: first.requestId, decision: 'always' })
  await ws.waitForTerminal(first.turnId)

  const second = await ws.request({ type: 'turn.start', message: 'again', session_id: 'sess-always' })
  const events = await ws.waitForTerminal(second.turn_id)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:risky', 'tool_result:risky:ok', 'iteration', 'turn.completed'])
  const session = await g.http('GET', '/v1/sessions/sess-always')
  assert.deepEqual(session.body.always_allowed, [{ tool: 'risky' }])
  assert.deepEqual(session.body.always_allowed_tools, ['risky'])

  const other = await startAndAwaitApproval(ws, { session_id: 'sess-other' })
  assert.ok(other.requestId.length > 0, 'a different session is asked again')
  assert.deepEqual(probes.runs.map((r) => r.label), ['first', 'second'])
})

test('always on shell ls grants that command only: a later touch && rm in the session is asked about again', async (t) => {
  const { g } = await startProbeGateway(t)
  const shell = (id: string, command: string): { id: string, name: string, arguments: Record<string, unknown> } =>
    ({ id, name: 'shell', arguments: { command } })
  g.provider.enqueue(
    { toolCalls: [shell('c1', 'ls')] }, { text: 'listed' },
    { toolCalls: [shell('c2', '  ls ')] }, { text: 'listed again' },
    { toolCalls: [shell('c3', 'touch PWN_ALWAYS && rm -f PWN_ALWAYS')] }, { text: 'done' }
  )
  const ws = await g.socket()
  const first = await startAndAwaitApproval(ws, { session_id: 'sess-shell' })
  await ws.request({ type: 'approval.respond', request_id: first.requestId, decision: 'always' })
  await ws.waitForTerminal(first.turnId)

  const second = await ws.request({ type: 'turn.start', message: 'again', session_id: 'sess-shell' })
  assert.deepEqual(shape(await ws.waitForTerminal(second.turn_id)),
    ['turn.started', 'iteration', 'tool_call:shell', 'tool_result:shell:ok', 'iteration', 'turn.completed'])

  const third = await startAndAwaitApproval(ws, { session_id: 'sess-shell' })
  const asked = ws.events(third.turnId).find((e) => e.event.kind === 'approval.requested')?.event
  assert.ok(asked?.kind === 'approval.requested' && asked.arguments.command === 'touch PWN_ALWAYS && rm -f PWN_ALWAYS')
  await ws.request({ type: 'approval.respond', request_id: third.requestId, decision: 'no' })
  assert.ok(shape(await ws.waitForTerminal(third.turnId)).includes('tool_result:shell:denied'))
  assert.equal(existsSync(join(g.workspace, 'PWN_ALWAYS')), false)

  const session = await g.http('GET', '/v1/sessions/sess-shell')
  assert.deepEqual(session.body.always_allowed, [{ tool: 'shell', command: 'ls' }])
  assert.deepEqual(session.body.always_allowed_tools, [])
})

test('edit replaces the result with the sanitized text and the original tool does not run', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'thanks' })
  const ws = await g.socket()
  const { turnId, requestId } = await startAndAwaitApproval(ws)
  await ws.request({ type: 'approval.respond', request_id: requestId, decision: 'edit', replacement: 'use the staging\u0007 server\ninstead' })
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration', 'approval.requested:risky', 'approval.resolved:edit',
    'tool_call:risky', 'tool_result:risky:replaced', 'iteration', 'turn.completed'
  ])
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.ok(result?.kind === 'tool_result')
  assert.equal(result.success, true)
  assert.equal(result.output, 'use the staging server\ninstead')
  assert.equal(result.receipt, undefined)
  assert.equal(probes.runs.length, 0)
  assert.equal(g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')?.content, 'use the staging server\ninstead')
})

test('edit without a replacement is refused with INVALID_DECISION and the request stays answerable', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'ok' })
  const ws = await g.socket()
  const { turnId, requestId } = await startAndAwaitApproval(ws)
  const refused = await ws.request({ type: 'approval.respond', request_id: requestId, decision: 'edit' })
  assert.deepEqual([refused.type, refused.code], ['error', 'INVALID_DECISION'])
  await ws.request({ type: 'approval.respond', request_id: requestId, decision: 'yes' })
  const events = await ws.waitForTerminal(turnId)
  assert.ok(shape(events).includes('tool_result:risky:ok'))
})

test('a non-interactive turn auto-denies prompt-required calls without asking and without blaming the user', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x'), { id: 'c2', name: 'probe', arguments: { label: 'fine' } }] }, { text: 'ok' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go', interactive: false })
  const events = await ws.waitForTerminal(accepted.turn_id)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration', 'tool_call:risky', 'tool_result:risky:denied',
    'tool_call:probe', 'tool_result:probe:ok', 'iteration', 'turn.completed'
  ])
  const denial = g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')?.content ?? ''
  assert.equal(denial, RUNTIME_DENIAL)
  assert.doesNotMatch(denial, /Denied by user|auto_approve|risk profile|level = "full"/)
  assert.deepEqual(probes.runs.map((r) => r.label), ['fine'])
  const turn = await g.http('GET', `/v1/turns/${accepted.turn_id}`)
  assert.deepEqual([turn.body.approvals[0].decision, turn.body.approvals[0].decided_by], ['auto-deny', 'runtime'])
})

test('an agent with on_no_backchannel = "deny" auto-denies at once when nobody who could answer is connected', async (t) => {
  const { g, probes } = await startProbeGateway(t, { agents: { default: { on_no_backchannel: 'deny' } } })
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'ok' })
  const startedAt = Date.now()
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.equal(res.status, 200)
  assert.ok(Date.now() - startedAt < 5000, 'denied at once, not after approval_timeout_ms')
  assert.deepEqual(res.body.tool_calls.map((c: { status: string }) => c.status), ['denied'])
  assert.equal(res.body.tool_calls[0].output, RUNTIME_DENIAL)
  assert.deepEqual([res.body.approvals[0].decision, res.body.approvals[0].decided_by], ['auto-deny', 'runtime'])
  assert.equal(probes.runs.length, 0)
})

test('a subscriber of the same principal receives the request and can answer through the REST fallback', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ delayMs: 300, toolCalls: [risky('c1', 'x')] }, { text: 'ok' })
  const started = await g.http('POST', '/v1/turns', { message: 'go' })
  const ws = await g.socket()
  await ws.request({ type: 'subscribe', turn_id: started.body.turn_id })
  const request = await ws.waitForEvent(started.body.turn_id, (e) => e.kind === 'approval.requested')
  const answer = await g.http('POST', `/v1/approvals/${requestIdOf(request)}`, { decision: 'yes' })
  assert.equal(answer.status, 200)
  assert.deepEqual(answer.body, { request_id: requestIdOf(request), turn_id: started.body.turn_id, decision: 'yes' })
  const events = await ws.waitForTerminal(started.body.turn_id)
  assert.ok(shape(events).includes('tool_result:risky:ok'))
  assert.equal(probes.runs.length, 1)
  const turn = await g.http('GET', `/v1/turns/${started.body.turn_id}`)
  assert.deepEqual([turn.body.approvals[0].channel, turn.body.approvals[0].decided_by], ['rest', 'rest:local/local'])
})

test('the first answer wins; a second answer hears APPROVAL_ALREADY_RESOLVED and everyone sees approval.resolved', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'ok' })
  const owner = await g.socket()
  const watcher = await g.socket()
  const { turnId, requestId } = await startAndAwaitApproval(owner)
  await watcher.request({ type: 'subscribe', turn_id: turnId })
  await watcher.waitForEvent(turnId, (e) => e.kind === 'approval.requested')
  const first = await watcher.request({ type: 'approval.respond', request_id: requestId, decision: 'no' })
  const second = await owner.request({ type: 'approval.respond', request_id: requestId, decision: 'yes' })
  assert.equal(first.type, 'approval.accepted')
  assert.deepEqual([second.type, second.code], ['error', 'APPROVAL_ALREADY_RESOLVED'])
  await owner.waitForTerminal(turnId)
  for (const s of [owner, watcher]) {
    const resolved = (await s.waitForEvent(turnId, (e) => e.kind === 'approval.resolved')).event
    assert.ok(resolved.kind === 'approval.resolved' && resolved.decision === 'no')
  }
})

test('an unknown approval request id is refused on both front doors', async (t) => {
  const { g } = await startProbeGateway(t)
  const ws = await g.socket()
  const frame = await ws.request({ type: 'approval.respond', request_id: 'apr_missing', decision: 'yes' })
  assert.deepEqual([frame.type, frame.code], ['error', 'APPROVAL_NOT_FOUND'])
  const rest = await g.http('POST', '/v1/approvals/apr_missing', { decision: 'yes' })
  assert.deepEqual([rest.status, rest.body.code], [404, 'APPROVAL_NOT_FOUND'])
})

test('an unanswered request expires after approval_timeout_ms and is denied by the runtime', async (t) => {
  const { g, probes } = await startProbeGateway(t, { turns: { approval_timeout_ms: 200 } })
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'ok' })
  const ws = await g.socket()
  const { turnId, request } = await startAndAwaitApproval(ws)
  assert.ok(request.event.kind === 'approval.requested' && Date.parse(request.event.expires_at) > Date.parse(request.ts))
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration', 'approval.requested:risky', 'approval.resolved:expired',
    'tool_call:risky', 'tool_result:risky:denied', 'iteration', 'turn.completed'
  ])
  assert.equal(g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')?.content, RUNTIME_DENIAL)
  assert.equal(probes.runs.length, 0)
})

test('cancelling a turn while it waits for approval resolves the request as cancelled', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] })
  const ws = await g.socket()
  const { turnId } = await startAndAwaitApproval(ws)
  await ws.request({ type: 'cancel', turn_id: turnId })
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration', 'approval.requested:risky', 'approval.resolved:cancelled',
    'tool_call:risky', 'tool_result:risky:cancelled', 'turn.cancelled'
  ])
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.ok(result?.kind === 'tool_result')
  assert.equal(result.output, '[not executed: the turn was cancelled while this call waited for approval]')
  assert.equal(probes.runs.length, 0)
})

test('an operator-approved shell call runs with the runtime approved marker restored, which its tool_call event does not show', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'shell', arguments: { command: 'touch made.txt', approved: false } }] }, { text: 'ok' })
  const ws = await g.socket()
  const { turnId, requestId } = await startAndAwaitApproval(ws)
  await ws.request({ type: 'approval.respond', request_id: requestId, decision: 'yes' })
  const events = await ws.waitForTerminal(turnId)
  const callEvent = events.find((e) => e.event.kind === 'tool_call')?.event
  assert.ok(callEvent?.kind === 'tool_call')
  assert.deepEqual(callEvent.arguments, { command: 'touch made.txt' })
  // touch is a medium-risk command: the shell runs it only with the runtime's marker set.
  assert.ok(shape(events).includes('tool_result:shell:ok'))
  assert.equal(existsSync(join(g.workspace, 'made.txt')), true)
})

test('a detached turn survives its owner socket closing and another socket can answer its approval', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ delayMs: 200, toolCalls: [risky('c1', 'x')] }, { text: 'ok' })
  const owner = await g.socket()
  const accepted = await owner.request({ type: 'turn.start', message: 'go', detach: true })
  owner.close()
  await owner.closed()
  const other = await g.socket()
  await other.request({ type: 'subscribe', turn_id: accepted.turn_id })
  const request = await other.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  await other.request({ type: 'approval.respond', request_id: requestIdOf(request), decision: 'yes' })
  const events = await other.waitForTerminal(accepted.turn_id)
  assert.equal(events.at(-1)?.event.kind, 'turn.completed')
  assert.equal(probes.runs.length, 1)
})
