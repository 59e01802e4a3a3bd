/**
 * Dispatch rules at the engine level: sequential by default, parallel only for an auto-approved
 * batch, results in call order, one result per call, cancellation inside a batch.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { defineTool, ok, type Tool } from '../../src/tools/contract.js'
import { createEngine, inModelOrder, ScriptedApprovals, shape, toolMessages } from './harness.js'

const call = (id: string, label: string, extra: Record<string, unknown> = {}, name = 'probe') => ({ id, name, arguments: { label, ...extra } })
const parallel = { runtime_profiles: { default: { parallel_tools: true } } }

test('calls run sequentially by default: each tool_call is followed by its own tool_result', async (t) => {
  const e = await createEngine(t)
  e.provider.enqueue({ toolCalls: [call('a', 'one', { ms: 30 }), call('b', 'two')] }, { text: 'finished' })
  const outcome = await e.run()
  assert.deepEqual(outcome, { status: 'completed', finalText: 'finished' })
  assert.deepEqual(shape(e.events), [
    'iteration', 'tool_call:probe', 'tool_result:probe:ok', 'tool_call:probe', 'tool_result:probe:ok', 'iteration'
  ])
  assert.deepEqual(e.events.flatMap((ev) => ev.kind === 'tool_call' ? [ev.arguments.label] : []), ['one', 'two'])
  assert.deepEqual(e.probes.runs.map((r) => r.label), ['one', 'two'])
})

test('results reach the model in call order, one tool message per call id', async (t) => {
  const e = await createEngine(t, { overrides: parallel })
  e.provider.enqueue({ toolCalls: [call('a', 'slow', { ms: 150 }), call('b', 'fast'), call('c', 'mid', { ms: 50 })] }, { text: 'ok' })
  assert.equal((await e.run()).status, 'completed')
  const assistant = e.provider.requests[1]?.messages.find((m) => m.role === 'assistant')
  assert.deepEqual(assistant?.tool_calls?.map((c) => c.id), ['a', 'b', 'c'])
  assert.deepEqual(toolMessages(e.provider, 1).map((m) => [m.tool_call_id, m.content]), [['a', 'done slow'], ['b', 'done fast'], ['c', 'done mid']])
  assert.deepEqual(inModelOrder(e.toolCalls).map((r) => r.provider_call_id), ['a', 'b', 'c'])
})

test('with parallel_tools on, an auto-approved batch runs concurrently and results arrive as they finish', async (t) => {
  const e = await createEngine(t, { overrides: parallel })
  e.provider.enqueue({ toolCalls: [call('a', 'slow', { ms: 300 }), call('b', 'fast')] }, { text: 'ok' })
  await e.run()
  assert.deepEqual(shape(e.events), [
    'iteration', 'tool_call:probe', 'tool_call:probe', 'tool_result:probe:ok', 'tool_result:probe:ok', 'iteration'
  ])
  assert.deepEqual(e.events.flatMap((ev) => ev.kind === 'tool_result' ? [ev.output] : []), ['done fast', 'done slow'], 'the fast call finishes first')
  assert.equal(e.probes.runs.length, 2)
})

test('a batch with a call that needs approval runs sequentially even with parallel_tools on', async (t) => {
  const approvals = new ScriptedApprovals(['yes'])
  const e = await createEngine(t, { overrides: parallel, approvals })
  e.provider.enqueue({ toolCalls: [call('a', 'first', { ms: 100 }), call('b', 'second', {}, 'risky')] }, { text: 'ok' })
  await e.run()
  // Preparation asks for approval before anything runs; then the batch runs one call at a time.
  assert.deepEqual(shape(e.events), [
    'iteration', 'approval.resolved:yes',
    'tool_call:probe', 'tool_result:probe:ok',
    'tool_call:risky', 'tool_result:risky:ok',
    'iteration'
  ])
  assert.deepEqual(approvals.questions.map((q) => q.tool), ['risky'])
})

test('a single call never counts as a parallel batch', async (t) => {
  const e = await createEngine(t, { overrides: parallel })
  e.provider.enqueue({ toolCalls: [call('a', 'only')] }, { text: 'ok' })
  await e.run()
  assert.deepEqual(shape(e.events), ['iteration', 'tool_call:probe', 'tool_result:probe:ok', 'iteration'])
})

test('cancelling a parallel batch keeps finished siblings and interrupts only unfinished calls', async (t) => {
  const e = await createEngine(t, {
    overrides: parallel,
    onEvent: (ev, engine) => { if (ev.kind === 'tool_result' && ev.output === 'done fast') engine.cancel('cancelled by owner') }
  })
  e.provider.enqueue({ toolCalls: [call('a', 'slow', { ms: 5000 }), call('b', 'fast')] })
  assert.deepEqual(await e.run(), { status: 'cancelled', reason: 'cancelled by owner' })
  assert.deepEqual(shape(e.events), [
    'iteration', 'tool_call:probe', 'tool_call:probe', 'tool_result:probe:ok', 'tool_result:probe:interrupted'
  ])
  assert.deepEqual(e.probes.runs.map((r) => [r.label, r.finished]), [['slow', false], ['fast', true]])
  const tools = e.state.history.filter((m) => m.role === 'tool')
  assert.deepEqual(tools.map((m) => m.content), ['[interrupted by user before this tool produced a result]', 'done fast'])
})

test('every tool_call event is matched by exactly one tool_result with the same call_id, also for an unknown tool', async (t) => {
  const e = await createEngine(t, { overrides: parallel })
  e.provider.enqueue(
    { toolCalls: [call('a', 'x', { ms: 20 }), call('b', 'y'), call('c', 'x', { ms: 20 }), { id: 'd', name: 'nope', arguments: {} }] },
    { text: 'ok' }
  )
  await e.run()
  const calls = e.events.flatMap((ev) => ev.kind === 'tool_call' ? [ev.call_id] : [])
  const results = e.events.flatMap((ev) => ev.kind === 'tool_result' ? [ev.call_id] : [])
  assert.equal(calls.length, 4)
  assert.deepEqual([...results].sort(), [...calls].sort())
  for (const id of calls) {
    const callAt = e.events.findIndex((ev) => ev.kind === 'tool_call' && ev.call_id === id)
    const resultAt = e.events.findIndex((ev) => ev.kind === 'tool_result' && ev.call_id === id)
    assert.ok(callAt < resultAt, `tool_call ${id} precedes its result`)
  }
  assert.deepEqual(inModelOrder(e.toolCalls).map((r) => `${String(r.provider_call_id)}:${r.status}`), ['a:ok', 'b:ok', 'c:deduplicated', 'd:error'])
})

test('a successful tool with empty output reports "(no output)" to the model, in the event and in the record', async (t) => {
  const e = await createEngine(t)
  e.provider.enqueue({ toolCalls: [call('q', 'silent', {}, 'quiet')] }, { text: 'It ran.' })
  await e.run()
  const result = e.events.find((ev) => ev.kind === 'tool_result')
  assert.ok(result?.kind === 'tool_result')
  assert.deepEqual([result.output, result.success, result.status], ['(no output)', true, 'ok'])
  assert.equal(toolMessages(e.provider, 1)[0]?.content, '(no output)')
  assert.equal(e.toolCalls[0]?.output, '(no output)')
})

test('a call\'s arguments are validated once, in preparation: the dispatcher runs it without checking them again', async (t) => {
  const base = defineTool<{ n: number }>({
    name: 'counted',
    description: 'answers with its n',
    parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
    async execute (args) { return ok(`n=${args.n}`) }
  })
  let validations = 0
  let checkedRuns = 0
  const counted: Tool = {
    ...base,
    validateArgs (args) {
      validations++
      return base.validateArgs(args)
    },
    async execute (args, ctx) {
      checkedRuns++
      return await base.execute(args, ctx)
    }
  }
  const e = await createEngine(t, {
    tools: [counted],
    overrides: { agents: { default: { provider: 'scripted', tools: ['counted'] } }, risk_profiles: { default: { auto_approve: ['counted'] } } }
  })
  e.provider.enqueue({ toolCalls: [{ id: 'a', name: 'counted', arguments: { n: 1 } }, { id: 'b', name: 'counted', arguments: { n: 'two' } }] }, { text: 'ok' })
  assert.equal((await e.run()).status, 'completed')
  assert.deepEqual(inModelOrder(e.toolCalls).map((c) => [c.status, c.output]), [
    ['ok', 'n=1'],
    ['error', 'Error: invalid arguments for \'counted\': /n must be integer']
  ])
  assert.deepEqual([validations, checkedRuns], [2, 0])
})

test('a cancel from a subscriber of the tool_call announcement interrupts that call at once', async (t) => {
  const e = await createEngine(t, {
    onEvent: (ev, engine) => { if (ev.kind === 'tool_call') engine.cancel('cancelled by owner') }
  })
  e.provider.enqueue({ toolCalls: [call('a', 'slow', { ms: 5000 })] })
  assert.deepEqual(await e.run(), { status: 'cancelled', reason: 'cancelled by owner' })
  assert.deepEqual(shape(e.events), ['iteration', 'tool_call:probe', 'tool_result:probe:interrupted'])
  assert.deepEqual(e.probes.runs.map((r) => [r.label, r.finished]), [['slow', false]])
})
