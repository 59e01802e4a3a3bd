import { test } from 'node:test'
import assert from 'node:assert/strict'
import { shape } from '../helpers/gateway.js'
import { startProbeGateway } from '../helpers/tools.js'

const probe = (id: string, label: string): { id: string, name: string, arguments: Record<string, unknown> } => ({ id, name: 'probe', arguments: { label } })
const shell = (id: string, command: string): { id: string, name: string, arguments: Record<string, unknown> } => ({ id, name: 'shell', arguments: { command } })

test('an identical call repeated in one response is skipped as a duplicate and never runs twice', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [probe('a', 'same'), probe('b', 'same'), probe('c', 'other')] }, { text: 'ok' })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration',
    'tool_call:probe', 'tool_result:probe:ok',
    'tool_call:probe', 'tool_result:probe:deduplicated',
    'tool_call:probe', 'tool_result:probe:ok',
    'iteration', 'turn.completed'
  ])
  assert.deepEqual(probes.runs.map((r) => r.label), ['same', 'other'])
  const tools = g.provider.requests[1]?.body.messages.filter((m) => m.role === 'tool') ?? []
  assert.deepEqual(tools.map((m) => m.tool_call_id), ['a', 'b', 'c'], 'the skipped call keeps its slot in history')
  assert.equal(tools[1]?.content, "Skipped duplicate tool call 'probe' with identical arguments in this response.")
})

test('a prompt-required shell call repeated in the same response is skipped without a second prompt', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [shell('a', 'echo hi'), shell('b', 'echo hi')] }, { text: 'ok' })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  await ws.answerApproval(turnId, 'yes')
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration',
    'approval.requested:shell', 'approval.resolved:yes',
    'tool_call:shell', 'tool_result:shell:ok',
    'tool_call:shell', 'tool_result:shell:deduplicated',
    'iteration', 'turn.completed'
  ])
  assert.equal(events.filter((e) => e.event.kind === 'approval.requested').length, 1)
})

test('a before_tool_call hook can cancel a call, which keeps its slot and the model\'s name', async (t) => {
  const { g, probes } = await startProbeGateway(t, {}, {
    hooks: {
      before: [{ name: 'block-secret', run: (c) => c.arguments.label === 'secret' ? { action: 'cancel', reason: 'labels named secret are blocked' } : { action: 'continue' } }],
      after: []
    }
  })
  g.provider.enqueue({ toolCalls: [probe('a', 'secret'), probe('b', 'fine')] }, { text: 'ok' })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration',
    'tool_call:probe', 'tool_result:probe:cancelled',
    'tool_call:probe', 'tool_result:probe:ok',
    'iteration', 'turn.completed'
  ])
  assert.equal(g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')?.content, 'Cancelled by hook: labels named secret are blocked')
  assert.deepEqual(probes.runs.map((r) => r.label), ['fine'])
})

test('after_tool_call hooks see every executed call, and only executed calls', async (t) => {
  const seen: Array<{ name: string, success: boolean, output: string }> = []
  const { g } = await startProbeGateway(t, {}, {
    hooks: { before: [], after: [{ name: 'record', run: (i) => { seen.push({ name: i.name, success: i.success, output: i.output }) } }] }
  })
  g.provider.enqueue({ toolCalls: [probe('a', 'x'), probe('b', 'x'), { id: 'c', name: 'risky', arguments: { label: 'y' } }, { id: 'd', name: 'quiet', arguments: { label: 'q' } }] }, { text: 'ok' })
  await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  assert.deepEqual(seen, [{ name: 'probe', success: true, output: 'done x' }, { name: 'quiet', success: true, output: '(no output)' }])
})
