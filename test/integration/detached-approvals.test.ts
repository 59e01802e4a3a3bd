import { test } from 'node:test'
import assert from 'node:assert/strict'
import { requestIdOf, shape, startGateway, type TestGateway } from '../helpers/gateway.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'
import { createProbes, probeOverrides, startProbeGateway } from '../helpers/tools.js'
import { finishedTurn, startTurn, turnEvents } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

const risky = (id: string, label: string): { id: string, name: string, arguments: Record<string, unknown> } => ({ id, name: 'risky', arguments: { label } })

/** Polls GET /v1/turns/:id until it lists a pending approval; returns the turn. */
async function pendingTurn (g: TestGateway, turnId: string, headers: Record<string, string> = {}): Promise<any> {
  let turn: any
  await eventually(async () => {
    turn = (await g.http('GET', `/v1/turns/${turnId}`, undefined, headers)).body
    return turn.pending_approvals?.length > 0
  }, { what: `a pending approval on ${turnId}` })
  return turn
}

test('a turn POSTed with no owner waits with its approval listed on GET, and a socket subscribing afterwards answers it', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'done' })
  const started = await startTurn(g, { message: 'go' })
  const turn = await pendingTurn(g, started.turn_id)
  assert.equal(turn.status, 'running')
  assert.equal(turn.pending_approvals.length, 1)
  const pending = turn.pending_approvals[0]
  assert.deepEqual(
    [pending.turn_id, pending.session_id, pending.tool, pending.summary, pending.display, pending.risk],
    [started.turn_id, started.session_id, 'risky', 'label: x', [{ name: 'label', value: 'x' }], 'medium']
  )
  assert.match(pending.reason, /'risky' is not auto-approved/)
  assert.equal(Date.parse(pending.expires_at) - Date.parse(pending.requested_at), 120_000)
  assert.equal(probes.runs.length, 0)

  // Nobody was connected while the turn asked (the listing above was read before any socket existed).
  const ws = await g.socket()
  await ws.request({ type: 'subscribe', turn_id: started.turn_id })
  const requested = await ws.waitForEvent(started.turn_id, (e) => e.kind === 'approval.requested')
  assert.ok(requested.event.kind === 'approval.requested')
  assert.deepEqual(
    [requested.event.request_id, requested.event.call_id, requested.event.risk, requested.event.reason,
      requested.event.requested_at, requested.event.expires_at],
    [pending.request_id, pending.call_id, pending.risk, pending.reason, pending.requested_at, pending.expires_at]
  )
  const ack = await ws.request({ type: 'approval.respond', request_id: pending.request_id, decision: 'yes' })
  assert.equal(ack.type, 'approval.accepted')
  const events = await ws.waitForTerminal(started.turn_id)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration', 'approval.requested:risky', 'approval.resolved:yes',
    'tool_call:risky', 'tool_result:risky:ok', 'iteration', 'turn.completed'
  ])
  assert.equal(probes.runs.length, 1)
  const done = await finishedTurn(g, started.turn_id)
  assert.deepEqual(done.pending_approvals, [])
  assert.equal(done.approvals[0].channel, 'websocket')
})

test('a REST answer with no socket at all runs the tool; GET /v1/approvals lists the request until then', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'done' })
  const started = await startTurn(g, { message: 'go' })
  const turn = await pendingTurn(g, started.turn_id)
  const listed = await g.http('GET', '/v1/approvals?status=pending')
  assert.equal(listed.status, 200)
  assert.deepEqual(listed.body, { items: turn.pending_approvals, next_cursor: null })

  const requestId = turn.pending_approvals[0].request_id
  const answer = await g.http('POST', `/v1/approvals/${requestId}`, { decision: 'yes' })
  assert.deepEqual([answer.status, answer.body], [200, { request_id: requestId, turn_id: started.turn_id, decision: 'yes' }])
  const done = await finishedTurn(g, started.turn_id)
  assert.equal(done.status, 'completed')
  assert.deepEqual(done.tool_calls.map((c: { status: string }) => c.status), ['ok'])
  assert.deepEqual([done.approvals[0].decision, done.approvals[0].channel], ['yes', 'rest'])
  assert.equal(probes.runs.length, 1)
  assert.deepEqual((await g.http('GET', '/v1/approvals?status=pending')).body, { items: [], next_cursor: null })
})

test('interactive:false still auto-denies at once, audited as auto-deny and never asked', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'ok' })
  const startedAt = Date.now()
  const started = await startTurn(g, { message: 'go', interactive: false })
  const done = await finishedTurn(g, started.turn_id)
  assert.ok(Date.now() - startedAt < 5000)
  assert.deepEqual(done.tool_calls.map((c: { status: string }) => c.status), ['denied'])
  assert.deepEqual([done.approvals[0].decision, done.approvals[0].decided_by], ['auto-deny', 'runtime'])
  const kinds = (await turnEvents(g, started.turn_id)).map((e) => e.event.kind)
  assert.equal(kinds.includes('approval.requested'), false)
  assert.equal(probes.runs.length, 0)
})

test('the approval wait comes from the turn, else the agent, and never exceeds turns.max_approval_timeout_ms', async (t) => {
  const { g } = await startProbeGateway(t, {
    turns: { max_approval_timeout_ms: 60_000 },
    agents: { default: { approval_timeout_ms: 30_000 } }
  })
  const waitOf = async (body: Record<string, unknown>): Promise<number> => {
    g.provider.enqueue({ toolCalls: [risky('c1', 'x')] })
    const started = await startTurn(g, { message: 'go', ...body })
    const p = (await pendingTurn(g, started.turn_id)).pending_approvals[0]
    await g.http('DELETE', `/v1/turns/${started.turn_id}`)
    return Date.parse(p.expires_at) - Date.parse(p.requested_at)
  }
  assert.equal(await waitOf({}), 30_000)
  assert.equal(await waitOf({ approval_timeout_ms: 5000 }), 5000)
  assert.equal(await waitOf({ approval_timeout_ms: 3_600_000 }), 60_000)
})

test('DELETE while waiting reports the call cancelled, audits the request cancelled, and ends with exactly one turn.cancelled', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x'), { id: 'c2', name: 'probe', arguments: { label: 'after' } }] })
  const started = await startTurn(g, { message: 'go' })
  await pendingTurn(g, started.turn_id)
  const cancelled = await g.http('DELETE', `/v1/turns/${started.turn_id}`)
  assert.deepEqual(cancelled.body, { turn_id: started.turn_id, status: 'cancelled' })
  const events = await turnEvents(g, started.turn_id)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration', 'approval.requested:risky', 'approval.resolved:cancelled',
    'tool_call:risky', 'tool_result:risky:cancelled', 'tool_call:probe', 'tool_result:probe:cancelled', 'turn.cancelled'
  ])
  assert.equal(events.filter((e) => e.event.kind === 'turn.cancelled').length, 1)
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.ok(result?.kind === 'tool_result')
  assert.equal(result.output, '[not executed: the turn was cancelled while this call waited for approval]')
  assert.doesNotMatch(result.output, /denied/)
  const turn = (await g.http('GET', `/v1/turns/${started.turn_id}`)).body
  assert.deepEqual([turn.approvals[0].decision, turn.approvals[0].decided_by], ['cancelled', 'runtime'])
  assert.deepEqual(turn.pending_approvals, [])
  assert.equal(probes.runs.length, 0)
})

test('late and wrong answers are typed errors that change nothing: unknown id, after expiry, after cancel, already answered', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  const unknown = await g.http('POST', '/v1/approvals/apr_unknown', { decision: 'yes' })
  assert.deepEqual([unknown.status, unknown.body.code], [404, 'APPROVAL_NOT_FOUND'])

  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'expired' })
  const expiring = await startTurn(g, { message: 'go', approval_timeout_ms: 300 })
  const expiredId = (await pendingTurn(g, expiring.turn_id)).pending_approvals[0].request_id
  const expiredTurn = await finishedTurn(g, expiring.turn_id)
  const late = await g.http('POST', `/v1/approvals/${expiredId}`, { decision: 'yes' })
  assert.deepEqual([late.status, late.body.code], [409, 'APPROVAL_EXPIRED'])
  const ws = await g.socket()
  const lateFrame = await ws.request({ type: 'approval.respond', request_id: expiredId, decision: 'always' })
  assert.deepEqual([lateFrame.type, lateFrame.code], ['error', 'APPROVAL_EXPIRED'])
  assert.deepEqual((await g.http('GET', `/v1/turns/${expiring.turn_id}`)).body, expiredTurn)
  assert.deepEqual([expiredTurn.approvals[0].decision, expiredTurn.tool_calls[0].status], ['expired', 'denied'])

  g.provider.enqueue({ toolCalls: [risky('c2', 'y')] })
  const cancelling = await startTurn(g, { message: 'go' })
  const cancelledId = (await pendingTurn(g, cancelling.turn_id)).pending_approvals[0].request_id
  await g.http('DELETE', `/v1/turns/${cancelling.turn_id}`)
  const afterCancel = await g.http('POST', `/v1/approvals/${cancelledId}`, { decision: 'yes' })
  assert.deepEqual([afterCancel.status, afterCancel.body.code], [409, 'APPROVAL_CANCELLED'])
  assert.equal((await g.http('GET', `/v1/turns/${cancelling.turn_id}`)).body.approvals.length, 1)

  g.provider.enqueue({ toolCalls: [risky('c3', 'z')] }, { text: 'ok' })
  const answered = await startTurn(g, { message: 'go' })
  const answeredId = (await pendingTurn(g, answered.turn_id)).pending_approvals[0].request_id
  assert.equal((await g.http('POST', `/v1/approvals/${answeredId}`, { decision: 'no' })).status, 200)
  const twice = await g.http('POST', `/v1/approvals/${answeredId}`, { decision: 'yes' })
  assert.deepEqual([twice.status, twice.body.code], [409, 'APPROVAL_ALREADY_RESOLVED'])
  // The catalogue's text, the same a peer instance's refusal is rebuilt with.
  assert.equal(twice.body.title, 'this approval request was already resolved')
  const done = await finishedTurn(g, answered.turn_id)
  assert.deepEqual([done.approvals.length, done.approvals[0].decision, done.tool_calls[0].status], [1, 'no', 'denied'])
  assert.equal(probes.runs.length, 0)
})

test('GET /v1/approvals pages newest first, filters by session and turn, and refuses an unknown status or a forged cursor', async (t) => {
  const { g } = await startProbeGateway(t)
  const turnIds: string[] = []
  for (const session of ['ses-a', 'ses-b', 'ses-c']) {
    g.provider.enqueue({ toolCalls: [risky(`c-${session}`, session)] })
    const started = await startTurn(g, { message: 'go', session_id: session })
    await pendingTurn(g, started.turn_id)
    turnIds.push(started.turn_id)
    // Distinct request times, so newest-first is unambiguous: wait for the clock to move on.
    const stamp = Date.now()
    await eventually(() => Date.now() > stamp, { what: 'the next millisecond' })
  }
  const first = await g.http('GET', '/v1/approvals?status=pending&limit=2')
  assert.deepEqual(first.body.items.map((p: { session_id: string }) => p.session_id), ['ses-c', 'ses-b'])
  assert.equal(typeof first.body.next_cursor, 'string')
  const second = await g.http('GET', `/v1/approvals?status=pending&limit=2&cursor=${first.body.next_cursor as string}`)
  assert.deepEqual([second.body.items.map((p: { session_id: string }) => p.session_id), second.body.next_cursor], [['ses-a'], null])
  const bySession = await g.http('GET', '/v1/approvals?status=pending&session_id=ses-b')
  assert.deepEqual(bySession.body.items.map((p: { turn_id: string }) => p.turn_id), [turnIds[1]])
  const byTurn = await g.http('GET', `/v1/approvals?status=pending&turn_id=${turnIds[0] as string}`)
  assert.deepEqual(byTurn.body.items.map((p: { session_id: string }) => p.session_id), ['ses-a'])

  const badStatus = await g.http('GET', '/v1/approvals?status=answered')
  assert.deepEqual([badStatus.status, badStatus.body.code], [400, 'INVALID_REQUEST'])
  const noStatus = await g.http('GET', '/v1/approvals')
  assert.deepEqual([noStatus.status, noStatus.body.code], [400, 'INVALID_REQUEST'])
  const forged = await g.http('GET', '/v1/approvals?status=pending&cursor=bm90LWEtY3Vyc29y')
  assert.deepEqual([forged.status, forged.body.code], [400, 'INVALID_REQUEST'])
  const tooMany = await g.http('GET', '/v1/approvals?status=pending&limit=101')
  assert.deepEqual([tooMany.status, tooMany.body.code], [400, 'INVALID_REQUEST'])
  for (const id of turnIds) await g.http('DELETE', `/v1/turns/${id}`)
})

test('sessions and turns are listed newest first with pagination, the running turn named on its session', async (t) => {
  const { g } = await startProbeGateway(t)
  for (const session of ['ses-1', 'ses-2', 'ses-3']) {
    g.provider.enqueue({ text: 'hi' })
    await finishedTurn(g, (await startTurn(g, { message: 'go', session_id: session })).turn_id)
    // Distinct times, so newest-first is unambiguous: wait for the clock to move on.
    const stamp = Date.now()
    await eventually(() => Date.now() > stamp, { what: 'the next millisecond' })
  }
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] })
  const running = await startTurn(g, { message: 'again', session_id: 'ses-1' })
  await pendingTurn(g, running.turn_id)

  const page1 = await g.http('GET', '/v1/sessions?limit=2')
  assert.equal(page1.status, 200)
  assert.deepEqual(page1.body.items.map((s: any) => [s.session_id, s.active_turn_id]), [['ses-1', running.turn_id], ['ses-3', null]])
  assert.deepEqual(Object.keys(page1.body.items[0]).sort(), ['active_turn_id', 'agent', 'created_at', 'session_id', 'updated_at'])
  const page2 = await g.http('GET', `/v1/sessions?limit=2&cursor=${page1.body.next_cursor as string}`)
  assert.deepEqual([page2.body.items.map((s: any) => s.session_id), page2.body.next_cursor], [['ses-2'], null])

  const runningTurns = await g.http('GET', '/v1/turns?status=running')
  assert.deepEqual(runningTurns.body.items.map((x: any) => [x.turn_id, x.session_id, x.status]), [[running.turn_id, 'ses-1', 'running']])
  const ofSession = await g.http('GET', '/v1/turns?session_id=ses-1')
  assert.deepEqual(ofSession.body.items.map((x: any) => x.status), ['running', 'completed'])
  const all1 = await g.http('GET', '/v1/turns?limit=3')
  const all2 = await g.http('GET', `/v1/turns?limit=3&cursor=${all1.body.next_cursor as string}`)
  const ids = [...all1.body.items, ...all2.body.items].map((x: any) => x.turn_id)
  assert.equal(new Set(ids).size, 4)
  assert.equal(ids[0], running.turn_id)
  assert.equal(all2.body.next_cursor, null)
  const badStatus = await g.http('GET', '/v1/turns?status=sleeping')
  assert.deepEqual([badStatus.status, badStatus.body.code], [400, 'INVALID_REQUEST'])
  await g.http('DELETE', `/v1/turns/${running.turn_id}`)
})

test('another principal sees none of it and cannot answer: listings are empty and its answer is APPROVAL_NOT_FOUND', async (t) => {
  const probes = createProbes()
  const aliceToken = await mintToken({ tenant: 'acme', sub: 'alice' })
  const g = await startGateway({ tools: probes.tools, overrides: probeOverrides(jwtAuth()), token: aliceToken })
  t.after(async () => { await g.close() })
  const alice = bearer(aliceToken)
  const bob = bearer(await mintToken({ tenant: 'acme', sub: 'bob' }))
  const aliceElsewhere = bearer(await mintToken({ tenant: 'globex', sub: 'alice' }))
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'ok' })
  const started = await g.http('POST', '/v1/turns', { message: 'go', session_id: 'alice-s' }, alice)
  assert.equal(started.status, 202)
  const turn = await pendingTurn(g, started.body.turn_id, alice)
  const requestId = turn.pending_approvals[0].request_id

  for (const other of [bob, aliceElsewhere]) {
    assert.deepEqual((await g.http('GET', '/v1/approvals?status=pending', undefined, other)).body, { items: [], next_cursor: null })
    assert.deepEqual((await g.http('GET', `/v1/approvals?status=pending&turn_id=${started.body.turn_id as string}`, undefined, other)).body.items, [])
    assert.deepEqual((await g.http('GET', '/v1/sessions', undefined, other)).body, { items: [], next_cursor: null })
    assert.deepEqual((await g.http('GET', '/v1/turns', undefined, other)).body, { items: [], next_cursor: null })
    const answer = await g.http('POST', `/v1/approvals/${requestId}`, { decision: 'yes' }, other)
    assert.deepEqual([answer.status, answer.body.code], [404, 'APPROVAL_NOT_FOUND'])
  }
  const still = await g.http('GET', `/v1/turns/${started.body.turn_id as string}`, undefined, alice)
  assert.deepEqual([still.body.status, still.body.pending_approvals, still.body.approvals], ['running', turn.pending_approvals, []])
  assert.equal((await g.http('GET', '/v1/approvals?status=pending', undefined, alice)).body.items.length, 1)
  assert.equal(probes.runs.length, 0)

  const own = await g.http('POST', `/v1/approvals/${requestId}`, { decision: 'yes' }, alice)
  assert.equal(own.status, 200)
  assert.equal((await finishedTurn(g, started.body.turn_id)).status, 'completed')
})

test('a socket of the same principal answers a detached turn it subscribed to through its session', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('c1', 'x')] }, { text: 'ok' })
  const started = await startTurn(g, { message: 'go', session_id: 'watched' })
  await pendingTurn(g, started.turn_id)
  const ws = await g.socket()
  await ws.request({ type: 'subscribe', session_id: 'watched' })
  const fresh = await g.http('GET', `/v1/turns/${started.turn_id}/events`)
  const request = fresh.body.events.find((e: any) => e.event.kind === 'approval.requested')
  const ack = await ws.request({ type: 'approval.respond', request_id: requestIdOf(request), decision: 'yes' })
  assert.equal(ack.type, 'approval.accepted')
  assert.equal((await finishedTurn(g, started.turn_id)).status, 'completed')
  assert.equal(probes.runs.length, 1)
})
