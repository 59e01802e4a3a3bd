import { test } from 'node:test'
import assert from 'node:assert/strict'
import { access, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startGateway, shape, assertSeqContiguous, type TestGateway } from '../helpers/gateway.js'
import type { RecordedRequest } from '../helpers/fake-provider.js'
import { runTurn } from '../helpers/turns.js'

async function gateway (t: { after: (fn: () => Promise<void>) => void }, overrides?: unknown): Promise<TestGateway> {
  const g = await startGateway(overrides === undefined ? {} : { overrides })
  t.after(() => g.close())
  await writeFile(join(g.workspace, 'hello.txt'), 'hi there')
  return g
}

function toolNames (request: RecordedRequest | undefined): string[] {
  return (request?.body.tools ?? []).map((t) => t.function.name)
}

/** The tool message the model saw for its first call, in the request after the round. */
function firstToolResult (g: TestGateway): string | null | undefined {
  return g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')?.content
}

async function exists (path: string): Promise<boolean> {
  return await access(path).then(() => true, () => false)
}

test('a risk-profile excluded tool is not offered to the model and a call to it is answered "Tool not available in this turn"', async (t) => {
  const g = await gateway(t, { risk_profiles: { default: { level: 'full', excluded_tools: ['shell'] } } })
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'shell', arguments: { command: 'touch made-by-shell' } }] },
    { text: 'I cannot use the shell.' }
  )
  const { turn, events } = await runTurn(g, { message: 'run touch' })
  assert.deepEqual(toolNames(g.provider.requests[0]), ['file_read', 'file_write', 'http_request'])
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:shell', 'tool_result:shell:error', 'iteration', 'turn.completed'])
  assert.equal(firstToolResult(g), 'Tool not available in this turn: shell')
  assert.equal(turn.tool_calls[0]?.output, 'Tool not available in this turn: shell')
  assert.equal(await exists(join(g.workspace, 'made-by-shell')), false)
})

test('per-run tools.exclude hides a tool from the provider for that turn only', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ text: 'one' }, { text: 'two' })
  await runTurn(g, { message: 'hi', tools: { exclude: ['shell', 'http_request'] } })
  await runTurn(g, { message: 'hi again' })
  assert.deepEqual(toolNames(g.provider.requests[0]), ['file_read', 'file_write'])
  assert.deepEqual(toolNames(g.provider.requests[1]), ['shell', 'file_read', 'file_write', 'http_request'])
})

test('per-run tools.allow narrows the tools the provider sees to the named ones', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ text: 'ok' })
  await runTurn(g, { message: 'hi', tools: { allow: ['file_read'] } })
  assert.deepEqual(toolNames(g.provider.requests[0]), ['file_read'])
})

test('a call to a tool outside the narrowed set is answered "Unknown tool" and never runs', async (t) => {
  const g = await gateway(t, { risk_profiles: { default: { level: 'full' } } })
  g.provider.enqueue(
    { toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'sneaky.txt', content: 'should not exist' } }] },
    { text: 'I could not write it.' }
  )
  const { turn, events } = await runTurn(g, { message: 'write a file', tools: { allow: ['file_read'] } })
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:file_write', 'tool_result:file_write:error', 'iteration', 'turn.completed'])
  assert.equal(firstToolResult(g), 'Unknown tool: file_write')
  assert.equal(turn.tool_calls[0]?.success, false)
  assert.equal(await exists(join(g.workspace, 'sneaky.txt')), false)
})

test('excluded_tools entries compare trimmed and case-insensitively, for the offer and for calls', async (t) => {
  const g = await gateway(t, { risk_profiles: { default: { level: 'full', excluded_tools: ['  File_Write '] } } })
  g.provider.enqueue(
    { toolCalls: [{ id: 'w1', name: 'FILE_WRITE', arguments: { path: 'upper.txt', content: 'x' } }] },
    { text: 'Blocked.' }
  )
  const { events } = await runTurn(g, { message: 'write' })
  assert.deepEqual(toolNames(g.provider.requests[0]), ['shell', 'file_read', 'http_request'])
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:FILE_WRITE', 'tool_result:FILE_WRITE:error', 'iteration', 'turn.completed'])
  assert.equal(firstToolResult(g), 'Tool not available in this turn: FILE_WRITE')
  assert.equal(await exists(join(g.workspace, 'upper.txt')), false)
})

test('a per-run exclude in other case and spacing blocks the tool too', async (t) => {
  const g = await gateway(t, { risk_profiles: { default: { level: 'full' } } })
  g.provider.enqueue(
    { toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'run.txt', content: 'x' } }] },
    { text: 'Blocked.' }
  )
  await runTurn(g, { message: 'write', tools: { exclude: [' FILE_write'] } })
  assert.deepEqual(toolNames(g.provider.requests[0]), ['shell', 'file_read', 'http_request'])
  assert.equal(firstToolResult(g), 'Tool not available in this turn: file_write')
  assert.equal(await exists(join(g.workspace, 'run.txt')), false)
})

test('risk-profile allowed_tools narrows the agent bundle', async (t) => {
  const g = await gateway(t, { risk_profiles: { default: { allowed_tools: ['file_read', 'http_request'] } } })
  g.provider.enqueue({ text: 'ok' })
  await runTurn(g, { message: 'hi' })
  assert.deepEqual(toolNames(g.provider.requests[0]), ['file_read', 'http_request'])
  const res = await g.http('POST', '/v1/turns', { message: 'hi', tools: { allow: ['shell'] } })
  assert.equal(res.status, 400)
  assert.equal(res.body.code, 'UNKNOWN_TOOL')
})

test('GET /v1/tools lists the effective tools of an agent with their approval requirement', async (t) => {
  const g = await gateway(t, {
    agents: { reader: { provider: 'fake', tools: ['file_read', 'shell', 'file_write'], risk_profile: 'careful' } },
    risk_profiles: { careful: { excluded_tools: ['file_write'], always_ask: ['file_read'] } }
  })
  const res = await g.http('GET', '/v1/tools')
  assert.equal(res.status, 200)
  assert.equal(res.body.agent, 'default')
  assert.deepEqual(res.body.tools.map((x: any) => [x.name, x.approval]), [
    ['shell', 'prompt'], ['file_read', 'approved'], ['file_write', 'prompt'], ['http_request', 'prompt']
  ])
  const fileRead = res.body.tools.find((x: any) => x.name === 'file_read')
  assert.equal(fileRead.provenance, 'native')
  assert.equal(fileRead.source, 'builtin')
  assert.deepEqual(fileRead.parameters.required, ['path'])
  const reader = await g.http('GET', '/v1/tools?agent=reader')
  assert.deepEqual(reader.body.tools.map((x: any) => [x.name, x.approval]), [['file_read', 'prompt'], ['shell', 'prompt']])
  const unknown = await g.http('GET', '/v1/tools?agent=nobody')
  assert.equal(unknown.status, 400)
  assert.equal(unknown.body.code, 'UNKNOWN_AGENT')
})

test('GET /v1/tools reports every tool approved under a full risk level', async (t) => {
  const g = await gateway(t, { risk_profiles: { default: { level: 'full' } } })
  const res = await g.http('GET', '/v1/tools')
  assert.deepEqual(res.body.tools.map((x: any) => x.approval), ['approved', 'approved', 'approved', 'approved'])
})

test('the provider receives the same tools array on every iteration of a turn', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'file_read', arguments: { path: 'hello.txt' } }] },
    { toolCalls: [{ id: 'c2', name: 'file_read', arguments: { path: 'missing.txt' } }] },
    { text: 'done' }
  )
  const { turn } = await runTurn(g, { message: 'read twice' })
  assert.equal(turn.iterations, 3)
  const [first, second, third] = g.provider.requests.map((r) => r.body.tools)
  assert.ok(first !== undefined && first.length === 4)
  assert.deepEqual(second, first)
  assert.deepEqual(third, first)
})

test('tools.allow naming a tool that policy hides is refused with UNKNOWN_TOOL instead of silently dropped', async (t) => {
  const g = await gateway(t, { risk_profiles: { default: { excluded_tools: ['shell'] } } })
  const res = await g.http('POST', '/v1/turns', { message: 'hi', tools: { allow: ['shell', 'file_read'] } })
  assert.equal(res.status, 400)
  assert.equal(res.body.code, 'UNKNOWN_TOOL')
  assert.match(res.body.detail, /shell/)
  assert.equal(g.provider.requests.length, 0)
})
