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
