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

test('argument key order does not make a duplicate look new', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({
    toolCalls: [
      { id: 'a', name: 'probe', arguments: '{"label":"x","output":"y"}' },
      { id: 'b', name: 'probe', arguments: '{"output":"y","label":"x"}' }
    ]
  }, { text: 'ok' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.deepEqual(res.body.tool_calls.map((c: { status: string }) => c.status), ['ok', 'deduplicated'])
  assert.equal(probes.runs.length, 1)
})

test('with dedup_scope turn, a call identical to one in an earlier round is skipped too', async (t) => {
  const { g, probes } = await startProbeGateway(t, { runtime_profiles: { default: { dedup_scope: 'turn' } } })
  g.provider.enqueue({ toolCalls: [probe('a', 'same')] }, { toolCalls: [probe('b', 'same')] }, { text: 'ok' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.deepEqual(res.body.tool_calls.map((c: { status: string }) => c.status), ['ok', 'deduplicated'])
  assert.equal(probes.runs.length, 1)
  assert.equal(res.body.tool_calls[1].output, "Skipped duplicate tool call 'probe' with identical arguments in this turn.")
})

test('with dedup_scope round, the same call in a later round runs again', async (t) => {
  const { g, probes } = await startProbeGateway(t, { runtime_profiles: { default: { dedup_scope: 'round' } } })
  g.provider.enqueue({ toolCalls: [probe('a', 'same')] }, { toolCalls: [probe('b', 'same'), probe('c', 'same')] }, { text: 'ok' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.deepEqual(res.body.tool_calls.map((c: { status: string }) => c.status), ['ok', 'ok', 'deduplicated'])
  assert.equal(probes.runs.length, 2)
  assert.equal(res.body.tool_calls[2].output, "Skipped duplicate tool call 'probe' with identical arguments in this response.")
})

test('a tool listed in tool_call_dedup_exempt may repeat identical calls', async (t) => {
  const { g, probes } = await startProbeGateway(t, { runtime_profiles: { default: { tool_call_dedup_exempt: ['probe'] } } })
  g.provider.enqueue({ toolCalls: [probe('a', 'same'), probe('b', 'same'), { id: 'c', name: 'quiet', arguments: { label: 'q' } }, { id: 'd', name: 'quiet', arguments: { label: 'q' } }] }, { text: 'ok' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.deepEqual(res.body.tool_calls.map((c: { name: string, status: string }) => `${c.name}:${c.status}`), ['probe:ok', 'probe:ok', 'quiet:ok', 'quiet:deduplicated'])
  assert.equal(probes.runs.length, 3)
})

test('dedup_enabled false lets identical calls run', async (t) => {
  const { g, probes } = await startProbeGateway(t, { runtime_profiles: { default: { dedup_enabled: false } } })
  g.provider.enqueue({ toolCalls: [probe('a', 'same'), probe('b', 'same')] }, { text: 'ok' })
  await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.equal(probes.runs.length, 2)
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

test('a prompt-required shell call repeated in a later round aborts the turn instead of prompting again', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [shell('a', 'echo hi')] }, { toolCalls: [shell('b', 'echo hi')] })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  await ws.answerApproval(turnId, 'yes')
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration',
    'approval.requested:shell', 'approval.resolved:yes',
    'tool_call:shell', 'tool_result:shell:ok',
    'iteration', 'turn.failed'
  ])
  const failed = events.at(-1)?.event
  assert.ok(failed?.kind === 'turn.failed')
  assert.equal(failed.code, 'REPEATED_PROMPT_REQUIRED_CALL')
  assert.equal(failed.message, "Agent loop aborted: repeated prompt-required tool call 'shell' with identical arguments before approval.")
})

test('the repeated shell guard holds even when shell is dedup-exempt', async (t) => {
  const { g } = await startProbeGateway(t, { runtime_profiles: { default: { tool_call_dedup_exempt: ['shell'] } } })
  g.provider.enqueue({ toolCalls: [shell('a', 'echo hi')] }, { toolCalls: [shell('b', 'echo hi')] })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go', interactive: false })
  const events = await ws.waitForTerminal(turnId)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:shell', 'tool_result:shell:denied', 'iteration', 'turn.failed'])
})

test('a shell call allowlisted with always is not prompt-required any more, so a later identical call runs', async (t) => {
  const { g } = await startProbeGateway(t, { runtime_profiles: { default: { dedup_scope: 'round' } } })
  g.provider.enqueue({ toolCalls: [shell('a', 'echo hi')] }, { toolCalls: [shell('b', 'echo hi')] }, { text: 'ok' })
  const ws = await g.socket()
  const { turn_id: turnId } = await ws.request({ type: 'turn.start', message: 'go' })
  await ws.answerApproval(turnId, 'always')
  const events = await ws.waitForTerminal(turnId)
  assert.equal(events.at(-1)?.event.kind, 'turn.completed')
  assert.equal(events.filter((e) => e.event.kind === 'tool_result' && e.event.status === 'ok').length, 2)
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

test('a before_tool_call hook can rewrite a call, and the rewritten call is what gets approved and run', async (t) => {
  const { g, probes } = await startProbeGateway(t, {}, {
    hooks: {
      before: [
        { name: 'low', priority: 1, run: (c) => ({ action: 'continue', arguments: { ...c.arguments, output: `${String(c.arguments.output)}+low` } }) },
        { name: 'high', priority: 10, run: (c) => ({ action: 'continue', name: 'probe', arguments: { ...c.arguments, output: 'high' } }) },
        { name: 'broken', priority: 5, run: () => { throw new Error('hook bug') } }
      ],
      after: []
    }
  })
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'r' } }] }, { text: 'ok' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  assert.equal(res.body.tool_calls[0].name, 'probe', 'rewritten to an auto-approved tool, so no approval was needed')
  assert.equal(res.body.tool_calls[0].output, 'high+low', 'hooks ran by descending priority; the broken one was skipped')
  assert.deepEqual(probes.runs.map((r) => r.tool), ['probe'])
  const assistant = g.provider.requests[1]?.body.messages.find((m) => m.role === 'assistant')
  assert.equal(assistant?.tool_calls?.[0]?.function.name, 'risky', 'history echoes what the model asked for')
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
