import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/log-capture.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'
import type { Observer, ObserverEvent } from '../../src/observe/observer.js'

interface Recorded {
  g: TestGateway
  records: ObserverEvent[]
}

async function setup (
  t: { after: (fn: () => Promise<void>) => void }, extra: Record<string, unknown> = {}, observers: Observer[] = []
): Promise<Recorded> {
  const records: ObserverEvent[] = []
  const g = await startGateway({
    tools: createProbes().tools, overrides: probeOverrides(extra),
    observers: [...observers, { record: (e) => { records.push(e) } }]
  })
  t.after(async () => { await g.close() })
  return { g, records }
}

function toolRecords (records: readonly ObserverEvent[]): Array<Extract<ObserverEvent, { kind: 'tool_call_start' | 'tool_call' }>> {
  return records.flatMap((r) => r.kind === 'tool_call_start' || r.kind === 'tool_call' ? [r] : [])
}

const probe = (id: string, args: Record<string, unknown>): { id: string, name: string, arguments: Record<string, unknown> } => ({ id, name: 'probe', arguments: args })

test('an executed call is recorded at its start and its end with the correlation fields', async (t) => {
  const { g, records } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('prov-1', { label: 'a' })] }, { text: 'done' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go', session_id: 's-obs' })
  const events = await ws.waitForTerminal(accepted.turn_id)
  const call = events.find((e) => e.event.kind === 'tool_call')?.event
  assert.ok(call?.kind === 'tool_call')
  const callId = call.call_id
  const [start, end, ...rest] = toolRecords(records)
  assert.equal(rest.length, 0)
  const correlation = { turn_id: accepted.turn_id, session_id: 's-obs', agent: 'default', channel: 'websocket' }
  assert.deepEqual(start, {
    kind: 'tool_call_start', tool: 'probe', call_id: callId, provider_call_id: 'prov-1', provenance: 'native', arguments: { label: 'a' }, ...correlation
  })
  assert.ok(end?.kind === 'tool_call')
  assert.equal(typeof end.duration_ms, 'number')
  assert.deepEqual({ ...end, duration_ms: 0 }, {
    kind: 'tool_call', tool: 'probe', call_id: callId, provider_call_id: 'prov-1', arguments: { label: 'a' },
    duration_ms: 0, success: true, status: 'ok', result: 'done a', ...correlation
  })
})

test('the turn is framed by turn_start and turn_end around its model requests and tool calls', async (t) => {
  const { g, records } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' })] }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.deepEqual(records.map((r) => r.kind), [
    'turn_start',
    'iteration', 'llm_request', 'llm_response', 'tool_call_start', 'tool_call',
    'iteration', 'llm_request', 'llm_response',
    'turn_end'
  ])
  assert.deepEqual(records.flatMap((r) => r.kind === 'iteration' ? [r.n] : []), [1, 2])
  assert.ok(records.every((r) => r.turn_id === res.body.turn_id && r.channel === 'http'))
  const end = records.at(-1)
  assert.ok(end?.kind === 'turn_end')
  assert.deepEqual([end.status, end.iterations], ['completed', 2])
})

test('a failed execution ends with an unsuccessful record carrying the error text', async (t) => {
  const { g, records } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a', fail: true })] }, { text: 'ok' })
  await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  const end = toolRecords(records).find((r) => r.kind === 'tool_call')
  assert.ok(end?.kind === 'tool_call')
  assert.deepEqual([end.success, end.status, end.result], [false, 'error', 'Error: probe a failed'])
})

test('an unknown tool gets a start and an end record although nothing ran', async (t) => {
  const { g, records } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'no_such_tool', arguments: {} }] }, { text: 'ok' })
  await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  const [start, end] = toolRecords(records)
  assert.equal(start?.kind, 'tool_call_start')
  assert.ok(end?.kind === 'tool_call')
  assert.deepEqual(
    [end.tool, end.success, end.status, end.error_type, end.result, end.duration_ms],
    ['no_such_tool', false, 'error', 'unknown_tool', 'Unknown tool: no_such_tool', 0]
  )
})

test('unknown and hidden tools are recorded in the model\'s call order, between the calls around them', async (t) => {
  const { g, records } = await setup(t, { agents: { default: { tools: ['probe', 'risky', 'quiet'] } } })
  g.provider.enqueue({
    toolCalls: [
      probe('c1', { label: 'first' }), { id: 'c2', name: 'no_such_tool', arguments: {} },
      probe('c3', { label: 'third' }), { id: 'c4', name: 'shell', arguments: { command: 'true' } }
    ]
  }, { text: 'ok' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  const statuses = res.body.tool_calls.map((c: { name: string, status: string }) => `${c.name}:${c.status}`)
  assert.deepEqual(statuses, ['probe:ok', 'no_such_tool:error', 'probe:ok', 'shell:error'])
  assert.deepEqual(toolRecords(records).map((r) => `${r.kind}:${r.provider_call_id ?? ''}`), [
    'tool_call_start:c1', 'tool_call:c1', 'tool_call_start:c2', 'tool_call:c2',
    'tool_call_start:c3', 'tool_call:c3', 'tool_call_start:c4', 'tool_call:c4'
  ])
  const ends = toolRecords(records).flatMap((r) => r.kind === 'tool_call' ? [`${r.tool}:${r.error_type ?? '-'}`] : [])
  assert.deepEqual(ends, ['probe:-', 'no_such_tool:unknown_tool', 'probe:-', 'shell:unknown_tool'])
})

test('a tool the turn\'s narrowing hides is recorded in order as not available', async (t) => {
  const { g, records } = await setup(t)
  g.provider.enqueue(
    { toolCalls: [probe('c1', { label: 'first' }), { id: 'c2', name: 'quiet', arguments: { label: 'x' } }, probe('c3', { label: 'third' })] },
    { text: 'ok' }
  )
  await g.http('POST', '/v1/turns?wait=true', { message: 'go', tools: { exclude: ['quiet'] } })
  assert.deepEqual(toolRecords(records).map((r) => `${r.kind}:${r.tool}:${r.kind === 'tool_call' ? r.error_type ?? '-' : ''}`), [
    'tool_call_start:probe:', 'tool_call:probe:-',
    'tool_call_start:quiet:', 'tool_call:quiet:tool_not_available',
    'tool_call_start:probe:', 'tool_call:probe:-'
  ])
})

test('an interrupted call still gets its end record, with status interrupted', async (t) => {
  const { g, records } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'slow', ms: 10_000 })] })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'tool_call')
  await ws.request({ type: 'cancel', turn_id: accepted.turn_id })
  await ws.waitForTerminal(accepted.turn_id)
  const end = toolRecords(records).find((r) => r.kind === 'tool_call')
  assert.ok(end?.kind === 'tool_call')
  assert.deepEqual([end.success, end.status], [false, 'interrupted'])
  assert.equal(records.at(-1)?.kind, 'turn_end')
})

test('calls decided before execution (denied, deduplicated) get no tool records, as in the reference', async (t) => {
  const { g, records } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'x' } }, probe('c2', { label: 'same' }), probe('c3', { label: 'same' })] }, { text: 'ok' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  assert.deepEqual(res.body.tool_calls.map((c: { status: string }) => c.status), ['denied', 'ok', 'deduplicated'])
  assert.deepEqual(toolRecords(records).map((r) => `${r.kind}:${r.tool}`), ['tool_call_start:probe', 'tool_call:probe'])
  const approval = records.find((r) => r.kind === 'approval')
  assert.ok(approval?.kind === 'approval')
  assert.deepEqual([approval.tool, approval.decision, approval.decided_by, approval.approval_channel, approval.principal], ['risky', 'auto-deny', 'runtime', 'runtime', 'runtime'])
})

test('parallel calls each pair their start and end by call_id', async (t) => {
  const { g, records } = await setup(t, { runtime_profiles: { default: { parallel_tools: true } } })
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'slow', ms: 100 }), probe('c2', { label: 'fast' })] }, { text: 'ok' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  const ids = res.body.tool_calls.map((c: { call_id: string }) => c.call_id) as string[]
  const tools = toolRecords(records)
  for (const id of ids) assert.deepEqual(tools.filter((r) => r.call_id === id).map((r) => r.kind), ['tool_call_start', 'tool_call'])
})

test('a throwing observer is logged and neither the turn nor the other observers notice', async (t) => {
  const logs = captureLogs('info')
  const records: ObserverEvent[] = []
  const g = await startGateway({
    logger: logs.logger,
    tools: createProbes().tools,
    overrides: probeOverrides(),
    observers: [{ record: () => { throw new Error('observer bug') } }, { record: (e) => { records.push(e) } }]
  })
  t.after(async () => { await g.close() })
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' })] }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.equal(res.body.status, 'completed')
  assert.equal(records.filter((r) => r.kind === 'tool_call').length, 1)
  const failures = logs.lines().filter((l) => l.msg === 'observer failed')
  assert.equal(failures.length, records.length)
  assert.equal(failures[0]?.err?.message, 'observer bug')
})
