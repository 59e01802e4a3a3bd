/**
 * Client tools: declared with the turn, offered to the model, run by the client. The turn waits
 * for the result like an approval — listed as pending, answerable over REST or WS, bounded by
 * the approval timeout, ended by cancellation — and survives a restart while it waits.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { finishedTurn, startTurn } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'
import { deferrer } from '../helpers/services.js'
import { events, finished, firstPendingApproval, kinds, setup } from '../helpers/durable-sqlite.js'

const PICK_COLOR = {
  name: 'pick_color',
  description: 'Ask the user to pick a colour in the page',
  parameters: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'], additionalProperties: false }
}

async function gateway (t: TestContext, overrides: unknown = {}): Promise<TestGateway> {
  const g = await startGateway({ overrides: { agents: { default: { tools: ['file_read'] } }, ...overrides as object } })
  t.after(() => g.close())
  return g
}

function scriptPick (g: { provider: TestGateway['provider'] }): void {
  g.provider.enqueue({ toolCalls: [{ id: 'p1', name: 'pick_color', arguments: { prompt: 'Which colour?' } }] }, { text: 'You picked blue.' })
}

type Http = (method: string, path: string) => Promise<{ status: number, body: any }>

async function waitingCall (g: { http: Http }, turnId: string): Promise<any> {
  let pending: any
  await eventually(async () => {
    pending = (await g.http('GET', `/v1/turns/${turnId}`)).body.pending_approvals?.[0]
    return pending !== undefined
  }, { what: 'the client tool call to wait' })
  return pending
}

test('a client tool call waits, listed as pending, until the client posts its result; the model reads the result', async (t) => {
  const g = await gateway(t)
  scriptPick(g)
  const { turn_id: turnId } = await startTurn(g, { message: 'pick a colour', client_tools: [PICK_COLOR] })
  const pending = await waitingCall(g, turnId)
  assert.equal(pending.client_tool, true)
  assert.equal(pending.tool, 'pick_color')
  assert.match(pending.request_id, /^ctr_/)
  assert.deepEqual(g.provider.requests[0]?.body.tools?.map((s) => s.function.name).sort(), ['file_read', 'pick_color'])
  const listed = await g.http('GET', `/v1/approvals?status=pending&turn_id=${turnId}`)
  assert.deepEqual(listed.body.items.map((p: any) => p.request_id), [pending.request_id])

  const posted = await g.http('POST', `/v1/turns/${turnId}/tool-results`, { call_id: pending.call_id, output: 'blue' })
  assert.equal(posted.status, 200, JSON.stringify(posted.body))
  assert.deepEqual(posted.body, { turn_id: turnId, call_id: pending.call_id, request_id: pending.request_id })
  const turn = await finishedTurn(g, turnId)
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, 'You picked blue.')
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.name, c.status, c.output]), [['pick_color', 'replaced', 'blue']])
  assert.deepEqual(turn.approvals.map((a: any) => [a.request_id, a.decision, a.channel]), [[pending.request_id, 'edit', 'rest']])
  const sent = g.provider.requests[1]?.body.messages.at(-1)
  assert.deepEqual([sent?.role, sent?.content], ['tool', 'blue'])

  const again = await g.http('POST', `/v1/turns/${turnId}/tool-results`, { call_id: pending.call_id, output: 'red' })
  assert.equal(again.status, 409)
  assert.equal(again.body.code, 'TURN_NOT_RUNNING')
})

test('a client tool call is answered over WebSocket with a tool.result frame', async (t) => {
  const g = await gateway(t)
  scriptPick(g)
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'pick a colour', client_tools: [PICK_COLOR] })
  assert.equal(accepted.type, 'turn.accepted', JSON.stringify(accepted))
  const turnId = accepted.turn_id as string
  const requested = await ws.waitForEvent(turnId, (e) => e.kind === 'approval.requested')
  const event = requested.event as any
  assert.equal(event.client_tool, true)
  assert.deepEqual(event.arguments, { prompt: 'Which colour?' })
  const ack = await ws.request({ type: 'tool.result', turn_id: turnId, call_id: event.call_id, output: 'green' })
  assert.deepEqual(ack, { type: 'tool.result.accepted', ref: ack.ref, turn_id: turnId, call_id: event.call_id, request_id: event.request_id })
  await ws.waitForTerminal(turnId)
  const turn = await finishedTurn(g, turnId)
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.status, c.output]), [['replaced', 'green']])
})

test('a client tool call is not approved or denied in place of its result', async (t) => {
  const g = await gateway(t)
  scriptPick(g)
  const { turn_id: turnId } = await startTurn(g, { message: 'pick a colour', client_tools: [PICK_COLOR] })
  const pending = await waitingCall(g, turnId)
  const yes = await g.http('POST', `/v1/approvals/${pending.request_id as string}`, { decision: 'yes' })
  assert.equal(yes.status, 400)
  assert.equal(yes.body.code, 'INVALID_DECISION')
  const wrong = await g.http('POST', `/v1/turns/${turnId}/tool-results`, { call_id: 'nope', output: 'x' })
  assert.equal(wrong.status, 404)
  assert.equal(wrong.body.code, 'TOOL_CALL_NOT_WAITING')
  assert.equal((await g.http('DELETE', `/v1/turns/${turnId}`)).status, 200)
  const turn = await finishedTurn(g, turnId)
  assert.equal(turn.status, 'cancelled')
  assert.deepEqual(turn.pending_approvals, [])
})

test('a client tool whose result does not come within the approval timeout is not run, and the turn goes on', async (t) => {
  const g = await gateway(t)
  scriptPick(g)
  const { turn_id: turnId } = await startTurn(g, { message: 'pick a colour', client_tools: [PICK_COLOR], approval_timeout_ms: 300 })
  const turn = await finishedTurn(g, turnId)
  assert.equal(turn.status, 'completed')
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.status, c.output]), [['denied', '[not executed: the client did not send the result of \'pick_color\' in time]']])
})

test('a client tool may not take the name of a gateway tool', async (t) => {
  const g = await gateway(t)
  const res = await g.http('POST', '/v1/turns', { message: 'hi', client_tools: [{ ...PICK_COLOR, name: 'shell' }] })
  assert.equal(res.status, 400)
  assert.equal(res.body.code, 'CLIENT_TOOL_CONFLICT')
})

test('an operator\'s always_ask applies before the client is asked for a result', async (t) => {
  const g = await gateway(t, { risk_profiles: { default: { always_ask: ['pick_color'] } } })
  scriptPick(g)
  const { turn_id: turnId } = await startTurn(g, { message: 'pick a colour', client_tools: [PICK_COLOR] })
  const approval = await waitingCall(g, turnId)
  assert.equal(approval.client_tool, undefined)
  assert.equal((await g.http('POST', `/v1/approvals/${approval.request_id as string}`, { decision: 'yes' })).status, 200)
  let result: any
  await eventually(async () => {
    result = (await g.http('GET', `/v1/turns/${turnId}`)).body.pending_approvals?.[0]
    return result?.client_tool === true
  }, { what: 'the approved call to wait for its result' })
  assert.equal((await g.http('POST', `/v1/turns/${turnId}/tool-results`, { call_id: result.call_id, output: 'blue' })).status, 200)
  const turn = await finishedTurn(g, turnId)
  assert.deepEqual(turn.approvals.map((a: any) => [a.tool, a.decision]), [['pick_color', 'yes'], ['pick_color', 'edit']])
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.status, c.output]), [['replaced', 'blue']])
})

test('a client tool call waiting for its result survives a restart of the gateway and completes with the result posted after it', async (t) => {
  const s = await setup(deferrer(t))
  const first = await s.start()
  scriptPick(s)
  const started = await first.http('POST', '/v1/turns', { message: 'pick a colour', client_tools: [PICK_COLOR], detach: true })
  assert.equal(started.status, 202, JSON.stringify(started.body))
  const turnId = started.body.turn_id as string
  const pending = await waitingCall(first, turnId)
  // Killed only once the wait is stored (listed by GET /v1/approvals from the store), not while it is only in memory.
  await firstPendingApproval(first, turnId, 'the client tool wait to be stored')
  await first.kill()

  const second = await s.start()
  // The restarted gateway resumes its turns after it listens: the call waits again once it has.
  assert.deepEqual(await waitingCall(second, turnId), pending)
  const posted = await second.http('POST', `/v1/turns/${turnId}/tool-results`, { call_id: pending.call_id, output: 'blue' })
  assert.equal(posted.status, 200, JSON.stringify(posted.body))
  const turn = await finished(second, turnId)
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, 'You picked blue.')
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.name, c.status, c.output]), [['pick_color', 'replaced', 'blue']])
  assert.ok(kinds(await events(second, turnId)).includes('turn.resumed'))
})
