/**
 * Preparation rules at the engine level, in the order preparation applies them: before-hooks
 * (rewrite or cancel), the approval marker cleared, duplicate guards, the repeated prompt-required
 * shell guard, approval; after-hooks see executed calls only.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { readOnlyDeniedText } from '../../src/approval/read-only.js'
import { createEngine, inModelOrder, ScriptedApprovals, shape, toolMessages } from './harness.js'

type Call = { id: string, name: string, arguments: Record<string, unknown> | string }
const probe = (id: string, label: string): Call => ({ id, name: 'probe', arguments: { label } })
const shell = (id: string, command: string): Call => ({ id, name: 'shell', arguments: { command } })
const statuses = (e: { toolCalls: Parameters<typeof inModelOrder>[0] }): string[] => inModelOrder(e.toolCalls).map((c) => c.status)

test('an identical call repeated in one response is skipped as a duplicate, never runs twice, and keeps its slot', async (t) => {
  const e = await createEngine(t)
  e.provider.enqueue({ toolCalls: [probe('a', 'same'), probe('b', 'same'), probe('c', 'other')] }, { text: 'ok' })
  await e.run()
  assert.deepEqual(shape(e.events), [
    'iteration',
    'tool_call:probe', 'tool_result:probe:ok',
    'tool_call:probe', 'tool_result:probe:deduplicated',
    'tool_call:probe', 'tool_result:probe:ok',
    'iteration'
  ])
  assert.deepEqual(e.probes.runs.map((r) => r.label), ['same', 'other'])
  const tools = toolMessages(e.provider, 1)
  assert.deepEqual(tools.map((m) => m.tool_call_id), ['a', 'b', 'c'], 'the skipped call keeps its slot in history')
  assert.equal(tools[1]?.content, "Skipped duplicate tool call 'probe' with identical arguments in this response.")
})

test('argument key order does not make a duplicate look new', async (t) => {
  const e = await createEngine(t)
  e.provider.enqueue({
    toolCalls: [
      { id: 'a', name: 'probe', arguments: '{"label":"x","output":"y"}' },
      { id: 'b', name: 'probe', arguments: '{"output":"y","label":"x"}' }
    ]
  }, { text: 'ok' })
  await e.run()
  assert.deepEqual(statuses(e), ['ok', 'deduplicated'])
  assert.equal(e.probes.runs.length, 1)
})

test('with dedup_scope turn, a call identical to one in an earlier round is skipped too', async (t) => {
  const e = await createEngine(t, { overrides: { runtime_profiles: { default: { dedup_scope: 'turn' } } } })
  e.provider.enqueue({ toolCalls: [probe('a', 'same')] }, { toolCalls: [probe('b', 'same')] }, { text: 'ok' })
  await e.run()
  assert.deepEqual(statuses(e), ['ok', 'deduplicated'])
  assert.equal(e.probes.runs.length, 1)
  assert.equal(inModelOrder(e.toolCalls)[1]?.output, "Skipped duplicate tool call 'probe' with identical arguments in this turn.")
})

test('with dedup_scope round, the same call in a later round runs again', async (t) => {
  const e = await createEngine(t, { overrides: { runtime_profiles: { default: { dedup_scope: 'round' } } } })
  e.provider.enqueue({ toolCalls: [probe('a', 'same')] }, { toolCalls: [probe('b', 'same'), probe('c', 'same')] }, { text: 'ok' })
  await e.run()
  assert.deepEqual(statuses(e), ['ok', 'ok', 'deduplicated'])
  assert.equal(e.probes.runs.length, 2)
  assert.equal(inModelOrder(e.toolCalls)[2]?.output, "Skipped duplicate tool call 'probe' with identical arguments in this response.")
})

test('a tool listed in tool_call_dedup_exempt may repeat identical calls', async (t) => {
  const e = await createEngine(t, { overrides: { runtime_profiles: { default: { tool_call_dedup_exempt: ['probe'] } } } })
  e.provider.enqueue({
    toolCalls: [probe('a', 'same'), probe('b', 'same'), { id: 'c', name: 'quiet', arguments: { label: 'q' } }, { id: 'd', name: 'quiet', arguments: { label: 'q' } }]
  }, { text: 'ok' })
  await e.run()
  assert.deepEqual(inModelOrder(e.toolCalls).map((c) => `${c.name}:${c.status}`), ['probe:ok', 'probe:ok', 'quiet:ok', 'quiet:deduplicated'])
  assert.equal(e.probes.runs.length, 3)
})

test('dedup_enabled false lets identical calls run', async (t) => {
  const e = await createEngine(t, { overrides: { runtime_profiles: { default: { dedup_enabled: false } } } })
  e.provider.enqueue({ toolCalls: [probe('a', 'same'), probe('b', 'same')] }, { text: 'ok' })
  await e.run()
  assert.equal(e.probes.runs.length, 2)
})

test('a prompt-required shell call repeated in the same response is skipped without a second prompt', async (t) => {
  const approvals = new ScriptedApprovals(['yes', 'yes'])
  const e = await createEngine(t, { approvals })
  e.provider.enqueue({ toolCalls: [shell('a', 'echo hi'), shell('b', 'echo hi')] }, { text: 'ok' })
  await e.run()
  assert.deepEqual(shape(e.events), [
    'iteration', 'approval.resolved:yes',
    'tool_call:shell', 'tool_result:shell:ok',
    'tool_call:shell', 'tool_result:shell:deduplicated',
    'iteration'
  ])
  assert.equal(approvals.questions.length, 1)
})

test('a prompt-required shell call repeated in a later round aborts the turn instead of prompting again', async (t) => {
  const approvals = new ScriptedApprovals(['yes', 'yes'])
  const e = await createEngine(t, { approvals })
  e.provider.enqueue({ toolCalls: [shell('a', 'echo hi')] }, { toolCalls: [shell('b', 'echo hi')] })
  const outcome = await e.run()
  assert.deepEqual(outcome, {
    status: 'failed',
    code: 'REPEATED_PROMPT_REQUIRED_CALL',
    message: "Agent loop aborted: repeated prompt-required tool call 'shell' with identical arguments before approval."
  })
  assert.deepEqual(shape(e.events), ['iteration', 'approval.resolved:yes', 'tool_call:shell', 'tool_result:shell:ok', 'iteration'])
  assert.equal(approvals.questions.length, 1)
})

test('the repeated shell guard holds even when shell is dedup-exempt', async (t) => {
  const e = await createEngine(t, { interactive: false, overrides: { runtime_profiles: { default: { tool_call_dedup_exempt: ['shell'] } } } })
  e.provider.enqueue({ toolCalls: [shell('a', 'echo hi')] }, { toolCalls: [shell('b', 'echo hi')] })
  const outcome = await e.run()
  assert.equal(outcome.status === 'failed' && outcome.code, 'REPEATED_PROMPT_REQUIRED_CALL')
  assert.deepEqual(shape(e.events), ['iteration', 'tool_call:shell', 'tool_result:shell:denied', 'iteration'])
})

test('a shell call allowlisted with always is not prompt-required any more, so a later identical call runs', async (t) => {
  const approvals = new ScriptedApprovals(['always'])
  const e = await createEngine(t, { approvals, overrides: { runtime_profiles: { default: { dedup_scope: 'round' } } } })
  e.provider.enqueue({ toolCalls: [shell('a', 'echo hi')] }, { toolCalls: [shell('b', 'echo hi')] }, { text: 'ok' })
  assert.equal((await e.run()).status, 'completed')
  assert.deepEqual(statuses(e), ['ok', 'ok'])
  assert.equal(approvals.questions.length, 1)
})

test('the model cannot approve itself: an approved marker in shell arguments is cleared', async (t) => {
  const e = await createEngine(t, { overrides: { risk_profiles: { default: { level: 'readonly' } } } })
  e.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'shell', arguments: { command: 'touch pwned.txt', approved: true } }] }, { text: 'ok' })
  await e.run()
  const [record] = e.toolCalls
  assert.equal(record?.status, 'denied')
  assert.equal(record?.output, readOnlyDeniedText('shell'))
  assert.equal(record?.arguments.approved, false)
  assert.equal(existsSync(join(e.workspace, 'pwned.txt')), false)
})

test('an operator-approved shell call runs with the runtime approved marker restored, which its tool_call event does not show', async (t) => {
  const e = await createEngine(t, { approvals: new ScriptedApprovals(['yes']) })
  e.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'shell', arguments: { command: 'touch made.txt', approved: false } }] }, { text: 'ok' })
  await e.run()
  const callEvent = e.events.find((ev) => ev.kind === 'tool_call')
  assert.ok(callEvent?.kind === 'tool_call')
  assert.deepEqual(callEvent.arguments, { command: 'touch made.txt' })
  // touch is a medium-risk command: the shell runs it only with the runtime's marker set.
  assert.ok(shape(e.events).includes('tool_result:shell:ok'))
  assert.equal(existsSync(join(e.workspace, 'made.txt')), true)
})

test('a before_tool_call hook can cancel a call, which keeps its slot and the model\'s name', async (t) => {
  const e = await createEngine(t, {
    hooks: {
      before: [{ name: 'block-secret', run: (c) => c.arguments.label === 'secret' ? { action: 'cancel', reason: 'labels named secret are blocked' } : { action: 'continue' } }],
      after: []
    }
  })
  e.provider.enqueue({ toolCalls: [probe('a', 'secret'), probe('b', 'fine')] }, { text: 'ok' })
  await e.run()
  assert.deepEqual(shape(e.events), [
    'iteration', 'tool_call:probe', 'tool_result:probe:cancelled', 'tool_call:probe', 'tool_result:probe:ok', 'iteration'
  ])
  assert.equal(toolMessages(e.provider, 1)[0]?.content, 'Cancelled by hook: labels named secret are blocked')
  assert.deepEqual(e.probes.runs.map((r) => r.label), ['fine'])
})

test('before_tool_call hooks run by descending priority, a throwing one is skipped, and the rewrite is what gets approved', async (t) => {
  const approvals = new ScriptedApprovals()
  const e = await createEngine(t, {
    interactive: false,
    approvals,
    hooks: {
      before: [
        { name: 'low', priority: 1, run: (c) => ({ action: 'continue', arguments: { ...c.arguments, output: `${String(c.arguments.output)}+low` } }) },
        { name: 'high', priority: 10, run: (c) => ({ action: 'continue', name: 'probe', arguments: { ...c.arguments, output: 'high' } }) },
        { name: 'broken', priority: 5, run: () => { throw new Error('hook bug') } }
      ],
      after: []
    }
  })
  e.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'r' } }] }, { text: 'ok' })
  await e.run()
  assert.equal(e.toolCalls[0]?.name, 'probe', 'rewritten to an auto-approved tool, so no approval was needed')
  assert.equal(e.toolCalls[0]?.output, 'high+low')
  assert.equal(approvals.questions.length, 0)
  assert.deepEqual(e.probes.runs.map((r) => r.tool), ['probe'])
  const assistant = e.provider.requests[1]?.messages.find((m) => m.role === 'assistant')
  assert.equal(assistant?.tool_calls?.[0]?.name, 'risky', 'history echoes what the model asked for')
})

test('after_tool_call hooks see every executed call, and only executed calls', async (t) => {
  const seen: Array<{ name: string, success: boolean, output: string }> = []
  const e = await createEngine(t, {
    interactive: false,
    hooks: { before: [], after: [{ name: 'record', run: (i) => { seen.push({ name: i.name, success: i.success, output: i.output }) } }] }
  })
  e.provider.enqueue({
    toolCalls: [probe('a', 'x'), probe('b', 'x'), { id: 'c', name: 'risky', arguments: { label: 'y' } }, { id: 'd', name: 'quiet', arguments: { label: 'q' } }]
  }, { text: 'ok' })
  await e.run()
  assert.deepEqual(seen, [{ name: 'probe', success: true, output: 'done x' }, { name: 'quiet', success: true, output: '(no output)' }])
  assert.deepEqual(statuses(e), ['ok', 'deduplicated', 'denied', 'ok'])
})
