import { test } from 'node:test'
import assert from 'node:assert/strict'
import { assertSeqContiguous, shape } from '../helpers/gateway.js'
import { startProbeGateway } from '../helpers/tools.js'

const call = (id: string, label: string, extra: Record<string, unknown> = {}, name = 'probe') => ({ id, name, arguments: { label, ...extra } })

test('calls run sequentially by default: each tool_call is followed by its own tool_result', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [call('a', 'one', { ms: 30 }), call('b', 'two')] }, { text: 'finished' })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  const events = await ws.waitForTerminal(turnId)
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration',
    'tool_call:probe', 'tool_result:probe:ok',
    'tool_call:probe', 'tool_result:probe:ok',
    'iteration', 'turn.completed'
  ])
  const calls = events.filter((e) => e.event.kind === 'tool_call').map((e) => e.event.kind === 'tool_call' && e.event.arguments.label)
  assert.deepEqual(calls, ['one', 'two'])
  assert.deepEqual(probes.runs.map((r) => r.label), ['one', 'two'])
})

test('results reach the model in call order, one tool message per call id', async (t) => {
  const { g } = await startProbeGateway(t, { runtime_profiles: { default: { parallel_tools: true } } })
  g.provider.enqueue({ toolCalls: [call('a', 'slow', { ms: 150 }), call('b', 'fast'), call('c', 'mid', { ms: 50 })] }, { text: 'ok' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.equal(res.status, 200)
  assert.equal(res.body.status, 'completed')
  const messages = g.provider.requests[1]?.body.messages ?? []
  const assistant = messages.find((m) => m.role === 'assistant')
  assert.deepEqual(assistant?.tool_calls?.map((c) => c.id), ['a', 'b', 'c'])
  const tools = messages.filter((m) => m.role === 'tool')
  assert.deepEqual(tools.map((m) => [m.tool_call_id, m.content]), [['a', 'done slow'], ['b', 'done fast'], ['c', 'done mid']])
})

test('with parallel_tools on, an auto-approved batch runs concurrently and results arrive as they finish', async (t) => {
  const { g, probes } = await startProbeGateway(t, { runtime_profiles: { default: { parallel_tools: true } } })
  g.provider.enqueue({ toolCalls: [call('a', 'slow', { ms: 300 }), call('b', 'fast')] }, { text: 'ok' })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration',
    'tool_call:probe', 'tool_call:probe',
    'tool_result:probe:ok', 'tool_result:probe:ok',
    'iteration', 'turn.completed'
  ])
  const results = events.flatMap((e) => e.event.kind === 'tool_result' ? [e.event.output] : [])
  assert.deepEqual(results, ['done fast', 'done slow'], 'the fast call finishes first')
  assert.equal(probes.runs.length, 2)
})

test('a batch with a call that needs approval runs sequentially even with parallel_tools on', async (t) => {
  const { g } = await startProbeGateway(t, { runtime_profiles: { default: { parallel_tools: true } } })
  g.provider.enqueue({ toolCalls: [call('a', 'first', { ms: 100 }), call('b', 'second', {}, 'risky')] }, { text: 'ok' })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  await ws.answerApproval(turnId, 'yes')
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration',
    'approval.requested:risky', 'approval.resolved:yes',
    'tool_call:probe', 'tool_result:probe:ok',
    'tool_call:risky', 'tool_result:risky:ok',
    'iteration', 'turn.completed'
  ])
})

test('a single call never counts as a parallel batch', async (t) => {
  const { g } = await startProbeGateway(t, { runtime_profiles: { default: { parallel_tools: true } } })
  g.provider.enqueue({ toolCalls: [call('a', 'only')] }, { text: 'ok' })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  assert.deepEqual(shape(await ws.waitForTerminal(turnId)), ['turn.started', 'iteration', 'tool_call:probe', 'tool_result:probe:ok', 'iteration', 'turn.completed'])
})

test('cancelling a sequential batch stops before the next call: the running one is interrupted, the tail never runs', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [call('a', 'done-first'), call('b', 'slow', { ms: 5000 }), call('c', 'never')] })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  await ws.waitForEvent(turnId, (e) => e.kind === 'tool_call' && e.arguments.label === 'slow')
  const cancel = await ws.request({ type: 'cancel', turn_id: turnId })
  assert.deepEqual([cancel.type, cancel.status], ['cancel.accepted', 'cancelled'])
  const events = await ws.waitForTerminal(turnId)
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration',
    'tool_call:probe', 'tool_result:probe:ok',
    'tool_call:probe', 'tool_result:probe:interrupted',
    'tool_call:probe', 'tool_result:probe:cancelled',
    'turn.cancelled'
  ])
  assert.deepEqual(probes.runs.map((r) => [r.label, r.finished, r.aborted]), [['done-first', true, false], ['slow', false, true]])
  const turn = await g.http('GET', `/v1/turns/${turnId}`)
  assert.deepEqual(turn.body.tool_calls.map((c: { status: string }) => c.status), ['ok', 'interrupted', 'cancelled'])
})

test('cancelling a parallel batch keeps finished siblings and interrupts only unfinished calls', async (t) => {
  const { g, probes } = await startProbeGateway(t, { runtime_profiles: { default: { parallel_tools: true } } })
  g.provider.enqueue({ toolCalls: [call('a', 'slow', { ms: 5000 }), call('b', 'fast')] })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  await ws.waitForEvent(turnId, (e) => e.kind === 'tool_result' && e.output === 'done fast')
  await g.http('DELETE', `/v1/turns/${turnId}`)
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration',
    'tool_call:probe', 'tool_call:probe',
    'tool_result:probe:ok', 'tool_result:probe:interrupted',
    'turn.cancelled'
  ])
  const results = events.filter((e) => e.event.kind === 'tool_result')
  assert.equal(results.length, 2, 'exactly one terminal result per call, none doubled')
  assert.deepEqual(probes.runs.map((r) => [r.label, r.finished]), [['slow', false], ['fast', true]])
  const session = await g.http('GET', `/v1/sessions/${events[0]?.event.kind === 'turn.started' ? events[0].event.session_id : ''}`)
  const toolMessages = session.body.history.filter((m: { role: string }) => m.role === 'tool')
  assert.deepEqual(toolMessages.map((m: { content: string }) => m.content), ['[interrupted by user before this tool produced a result]', 'done fast'])
})

test('every tool_call event is matched by exactly one tool_result with the same call_id', async (t) => {
  const { g } = await startProbeGateway(t, { runtime_profiles: { default: { parallel_tools: true } } })
  g.provider.enqueue(
    { toolCalls: [call('a', 'x', { ms: 20 }), call('b', 'y'), call('c', 'x', { ms: 20 }), { id: 'd', name: 'nope', arguments: {} }] },
    { text: 'ok' }
  )
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  const events = await ws.waitForTerminal(turnId)
  const calls = events.flatMap((e) => e.event.kind === 'tool_call' ? [e.event.call_id] : [])
  const results = events.flatMap((e) => e.event.kind === 'tool_result' ? [e.event.call_id] : [])
  assert.equal(calls.length, 4)
  assert.deepEqual([...results].sort(), [...calls].sort())
  for (const id of calls) {
    const callAt = events.findIndex((e) => e.event.kind === 'tool_call' && e.event.call_id === id)
    const resultAt = events.findIndex((e) => e.event.kind === 'tool_result' && e.event.call_id === id)
    assert.ok(callAt < resultAt, `tool_call ${id} precedes its result`)
  }
})
