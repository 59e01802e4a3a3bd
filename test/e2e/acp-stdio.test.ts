/**
 * `tollgate acp` as an editor runs it: a child process speaking ACP v1 on stdio, driven by the
 * official `@agentclientprotocol/sdk` client, running each prompt as a turn on a real gateway
 * (which talks to a fake OpenAI-compatible provider over HTTP).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startGateway } from '../helpers/gateway.js'
import { eventually } from '../helpers/eventually.js'
import { acpHarness, messageText, spawnAcp, stopChild, updateKinds } from '../helpers/acp.js'

test('a prompt whose model reads a file streams tool_call, a completed tool_call_update with the output, the answer as message chunks, and ends with end_turn', async (t) => {
  const g = await startGateway()
  t.after(async () => { await g.close() })
  await mkdir(g.workspace, { recursive: true })
  await writeFile(join(g.workspace, 'notes.txt'), 'buy milk\n')
  g.provider.enqueue({ toolCalls: [{ id: 'r1', name: 'file_read', arguments: { path: 'notes.txt' } }] }, { text: 'The notes say: buy milk.' })
  const acp = spawnAcp(g.url)
  t.after(async () => { await stopChild(acp.child) })
  const h = acpHarness(acp.stream)

  const { init, sessionId, response } = await h.run(async (ctx) => {
    const init = await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
    const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    const response = await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'what do my notes say?' }] })
    return { init, sessionId, response }
  })
  assert.equal(init.protocolVersion, 1)
  assert.equal(init.agentCapabilities?.loadSession, true)
  assert.equal(response.stopReason, 'end_turn')
  assert.ok(h.updates.every((u) => u.sessionId === sessionId))
  assert.deepEqual(updateKinds(h.updates), ['tool_call', 'tool_call_update:in_progress', 'tool_call_update:completed', 'agent_message_chunk'])
  const call = h.updates[0]?.update
  assert.ok(call?.sessionUpdate === 'tool_call')
  assert.deepEqual({ title: call.title, kind: call.kind, status: call.status, rawInput: call.rawInput }, {
    title: 'file_read: notes.txt', kind: 'read', status: 'pending', rawInput: { path: 'notes.txt' }
  })
  const done = h.updates[2]?.update
  assert.ok(done?.sessionUpdate === 'tool_call_update')
  assert.equal(done.toolCallId, call.toolCallId)
  const content = done.content?.[0]
  assert.ok(content?.type === 'content' && content.content.type === 'text')
  assert.match(content.content.text, /buy milk/)
  assert.match(JSON.stringify(done.rawOutput), /buy milk/)
  assert.equal(messageText(h.updates), 'The notes say: buy milk.')
  // The ACP session is the Tollgate session of the turn.
  assert.equal((await g.http('GET', `/v1/sessions/${sessionId}`)).status, 200)
})

for (const choice of ['allow_once', 'reject_once'] as const) {
  test(`a file_write asks session/request_permission with allow_once, allow_always and reject_once; ${choice} ${choice === 'allow_once' ? 'runs it' : 'does not run it'}`, async (t) => {
    const g = await startGateway()
    t.after(async () => { await g.close() })
    g.provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'out.txt', content: 'hello\n' } }] }, { text: 'Done.' })
    const acp = spawnAcp(g.url)
    t.after(async () => { await stopChild(acp.child) })
    const h = acpHarness(acp.stream, () => ({ outcome: { outcome: 'selected', optionId: choice } }))
    const response = await h.run(async (ctx) => {
      await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
      return await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'write out.txt' }] })
    })
    assert.equal(response.stopReason, 'end_turn')
    assert.equal(h.permissions.length, 1)
    const asked = h.permissions[0]
    assert.deepEqual(asked?.options.map((o) => [o.optionId, o.kind]), [
      ['allow_once', 'allow_once'], ['allow_always', 'allow_always'], ['reject_once', 'reject_once']
    ])
    assert.equal(asked?.toolCall.kind, 'edit')
    assert.deepEqual(asked?.toolCall.rawInput, { path: 'out.txt', content: 'hello\n' })
    const file = join(g.workspace, 'out.txt')
    const result = h.updates.map((u) => u.update).find((u) => u.sessionUpdate === 'tool_call_update' && u.status !== 'in_progress')
    if (choice === 'allow_once') {
      assert.equal(await readFile(file, 'utf8'), 'hello\n')
      assert.equal(result?.sessionUpdate === 'tool_call_update' && result.status, 'completed')
    } else {
      assert.equal(existsSync(file), false)
      assert.equal(result?.sessionUpdate === 'tool_call_update' && result.status, 'failed')
    }
  })
}

test('over the stdio command an edit chosen with a replacement is answered edit over the WebSocket protocol, recorded with the person', async (t) => {
  const g = await startGateway()
  t.after(async () => { await g.close() })
  g.provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'out.txt', content: 'hello\n' } }] }, { text: 'Noted.' })
  const acp = spawnAcp(g.url)
  t.after(async () => { await stopChild(acp.child) })
  const h = acpHarness(acp.stream, () => ({ outcome: { outcome: 'selected', optionId: 'edit', _meta: { tollgate: { replacement: 'written by hand' } } } }))
  const response = await h.run(async (ctx) => {
    await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {}, _meta: { tollgate: { edit: true } } })
    const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    return await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'write out.txt' }] })
  })
  assert.equal(response.stopReason, 'end_turn')
  assert.deepEqual(h.permissions[0]?.options.map((o) => o.optionId), ['allow_once', 'allow_always', 'reject_once', 'edit'])
  assert.equal(existsSync(join(g.workspace, 'out.txt')), false)
  const turns = (await g.http('GET', '/v1/turns')).body.items
  const turn = (await g.http('GET', `/v1/turns/${turns[0].turn_id as string}`)).body
  assert.deepEqual(turn.approvals.map((a: Record<string, string>) => [a.decision, a.decided_by, a.channel]), [['edit', 'ws:local/local', 'websocket']])
  assert.equal(turn.tool_calls[0].output, 'written by hand')
})

test('session/cancel during a stalled model call answers the prompt with stopReason cancelled within 3 s', async (t) => {
  const g = await startGateway()
  t.after(async () => { await g.close() })
  g.provider.enqueue({ hang: true })
  const acp = spawnAcp(g.url)
  t.after(async () => { await stopChild(acp.child) })
  const h = acpHarness(acp.stream)
  const { response, elapsed } = await h.run(async (ctx) => {
    await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
    const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    const prompt = ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'think hard' }] })
    await eventually(() => g.provider.open() === 1, { what: 'the model call to stall' })
    const started = Date.now()
    await ctx.notify('session/cancel', { sessionId })
    const response = await prompt
    return { response, elapsed: Date.now() - started }
  })
  assert.equal(response.stopReason, 'cancelled')
  assert.ok(elapsed < 3000, `answered after ${elapsed} ms`)
  const turns = (await g.http('GET', '/v1/turns')).body.items
  assert.deepEqual(turns.map((x: { status: string }) => x.status), ['cancelled'])
})
