/**
 * `/v1/acp`: the Agent Client Protocol over a WebSocket to the gateway itself, driven by the
 * official SDK's client and its WebSocket stream, with JWT authentication: the same mapping as
 * the stdio command, and no socket without a token or without the subprotocol.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { WebSocket } from 'ws'
import { createWebSocketStream, type WebSocketConstructor } from '@agentclientprotocol/sdk/experimental/ws-client'
import { startGateway, TestSocket, type TestGateway } from '../helpers/gateway.js'
import { jwtAuth, mintToken } from '../helpers/tokens.js'
import { gate } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'
import { acpHarness, messageText, updateKinds, type PermissionAnswer } from '../helpers/acp.js'
import { defineTool, ok } from '../../src/tools/contract.js'

async function jwtGateway (t: { after: (fn: () => Promise<void>) => void }): Promise<{ g: TestGateway, token: string, acpUrl: string }> {
  const token = await mintToken()
  const g = await startGateway({ overrides: jwtAuth(), token })
  t.after(async () => { await g.close() })
  return { g, token, acpUrl: `${g.url.replace(/^http/, 'ws')}/v1/acp` }
}

function overSocket (acpUrl: string, token: string, answer?: PermissionAnswer): ReturnType<typeof acpHarness> {
  return acpHarness(() => createWebSocketStream(acpUrl, {
    protocols: ['tollgate.acp.v1', `bearer.${token}`], WebSocket: WebSocket as unknown as WebSocketConstructor
  }), answer)
}

test('over /v1/acp with a bearer token, a file read streams tool_call, its completed update and the answer, and ends with end_turn', async (t) => {
  const { g, token, acpUrl } = await jwtGateway(t)
  const workspace = g.tenantWorkspace('acme')
  await mkdir(workspace, { recursive: true })
  await writeFile(join(workspace, 'notes.txt'), 'buy milk\n')
  g.provider.enqueue({ toolCalls: [{ id: 'r1', name: 'file_read', arguments: { path: 'notes.txt' } }] }, { text: 'Buy milk.' })
  const h = overSocket(acpUrl, token)
  const { response, sessionId } = await h.run(async (ctx) => {
    await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
    const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    return { sessionId, response: await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'my notes?' }] }) }
  })
  assert.equal(response.stopReason, 'end_turn')
  assert.deepEqual(updateKinds(h.updates), ['tool_call', 'tool_call_update:in_progress', 'tool_call_update:completed', 'agent_message_chunk'])
  const done = h.updates[2]?.update
  assert.ok(done?.sessionUpdate === 'tool_call_update')
  assert.match(JSON.stringify(done.content), /buy milk/)
  assert.equal(messageText(h.updates), 'Buy milk.')

  // session/load on a new connection replays the session's history.
  const replay = overSocket(acpUrl, token)
  await replay.run(async (ctx) => {
    await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
    await ctx.request('session/load', { sessionId, cwd: '/tmp', mcpServers: [] })
  })
  assert.deepEqual(updateKinds(replay.updates), ['user_message_chunk', 'tool_call', 'tool_call_update:completed', 'agent_message_chunk'])
  assert.equal(messageText(replay.updates), 'Buy milk.')
})

for (const choice of ['allow_once', 'reject_once'] as const) {
  test(`over /v1/acp a file_write asks session/request_permission; ${choice} ${choice === 'allow_once' ? 'runs it' : 'does not run it'}`, async (t) => {
    const { g, token, acpUrl } = await jwtGateway(t)
    g.provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'out.txt', content: 'hi\n' } }] }, { text: 'Done.' })
    const h = overSocket(acpUrl, token, () => ({ outcome: { outcome: 'selected', optionId: choice } }))
    const response = await h.run(async (ctx) => {
      await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
      return await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'write it' }] })
    })
    assert.equal(response.stopReason, 'end_turn')
    assert.deepEqual(h.permissions.map((p) => p.options.map((o) => o.optionId)), [['allow_once', 'allow_always', 'reject_once']])
    const file = join(g.tenantWorkspace('acme'), 'out.txt')
    if (choice === 'allow_once') assert.equal(await readFile(file, 'utf8'), 'hi\n')
    else assert.equal(existsSync(file), false)
    const turns = (await g.http('GET', '/v1/turns')).body.items
    const turn = (await g.http('GET', `/v1/turns/${turns[0].turn_id as string}`)).body
    assert.deepEqual(turn.approvals.map((a: { decision: string, channel: string }) => [a.decision, a.channel]), [[choice === 'allow_once' ? 'yes' : 'no', 'acp']])
  })
}

test('over /v1/acp session/cancel during a stalled model call answers cancelled within 3 s', async (t) => {
  const { g, token, acpUrl } = await jwtGateway(t)
  g.provider.enqueue({ hang: true })
  const h = overSocket(acpUrl, token)
  const { response, elapsed } = await h.run(async (ctx) => {
    await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
    const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    const prompt = ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'think' }] })
    await eventually(() => g.provider.open() === 1, { what: 'the model call to stall' })
    const started = Date.now()
    await ctx.notify('session/cancel', { sessionId })
    const response = await prompt
    return { response, elapsed: Date.now() - started }
  })
  assert.equal(response.stopReason, 'cancelled')
  assert.ok(elapsed < 3000, `answered after ${elapsed} ms`)
})

test('/v1/acp refuses an upgrade without a token (401) and one that does not offer tollgate.acp.v1 (400)', async (t) => {
  const { token, acpUrl } = await jwtGateway(t)
  await assert.rejects(TestSocket.open(acpUrl, ['tollgate.acp.v1'], {}), (err: { statusCode?: number, body?: { code?: string } }) => {
    assert.equal(err.statusCode, 401)
    assert.equal(err.body?.code, 'UNAUTHENTICATED')
    return true
  })
  await assert.rejects(TestSocket.open(acpUrl, [`bearer.${token}`], {}), (err: { statusCode?: number, body?: { code?: string } }) => {
    assert.equal(err.statusCode, 400)
    assert.equal(err.body?.code, 'SUBPROTOCOL_REQUIRED')
    return true
  })
})

test('a client that opts into steering sends a second prompt while the turn runs: it joins the running turn as a user_message_chunk and both prompts end with it', async (t) => {
  const { g, token, acpUrl } = await jwtGateway(t)
  const held = gate()
  g.provider.enqueue({ text: 'Long answer.', gate: held.promise }, { text: 'Short answer.' })
  const h = overSocket(acpUrl, token)
  const { first, second, init } = await h.run(async (ctx) => {
    const init = await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {}, _meta: { tollgate: { steering: true } } })
    const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    const first = ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'explain' }] })
    await eventually(() => g.provider.open() === 1, { what: 'the model call' })
    const second = ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'shorter please' }] })
    await eventually(async () => (await g.http('GET', '/v1/turns')).body.items.length === 1 &&
      h.updates.some((u) => u.update.sessionUpdate === 'user_message_chunk'), { what: 'the steering message' })
    held.open()
    return { init, first: await first, second: await second }
  })
  assert.deepEqual(init._meta, { tollgate: { steering: true, edit: false } })
  assert.equal(first.stopReason, 'end_turn')
  assert.equal(second.stopReason, 'end_turn')
  assert.equal(messageText(h.updates), 'Long answer.Short answer.')
  assert.equal(g.provider.requests[1]?.body.messages.at(-1)?.content, 'shorter please')
  const turns = (await g.http('GET', '/v1/turns')).body.items
  assert.equal(turns.length, 1, 'one turn, steered')
})

test('without the opt-in, a second prompt while the turn runs waits and runs as the next turn of the session', async (t) => {
  const { g, token, acpUrl } = await jwtGateway(t)
  const held = gate()
  g.provider.enqueue({ text: 'First.', gate: held.promise }, { text: 'Second.' })
  const h = overSocket(acpUrl, token)
  const { first, second } = await h.run(async (ctx) => {
    await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
    const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    const first = ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'one' }] })
    await eventually(() => g.provider.open() === 1, { what: 'the model call' })
    const second = ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'two' }] })
    held.open()
    return { first: await first, second: await second }
  })
  assert.deepEqual([first.stopReason, second.stopReason], ['end_turn', 'end_turn'])
  assert.equal(messageText(h.updates), 'First.Second.')
  const turns = (await g.http('GET', '/v1/turns')).body.items
  assert.deepEqual(turns.map((x: { status: string }) => x.status), ['completed', 'completed'])
  assert.deepEqual(g.provider.requests[1]?.body.messages.slice(-3).map((m) => m.content), ['one', 'First.', 'two'])
})

test('over /v1/acp the model\'s reasoning arrives as agent_thought_chunk, apart from the answer', async (t) => {
  const { g, token, acpUrl } = await jwtGateway(t)
  g.provider.enqueue({ reasoning: 'The user greets me; answer briefly.', text: 'Hello!' })
  const h = overSocket(acpUrl, token)
  const { response } = await h.run(async (ctx) => {
    await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
    const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    return { response: await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hi' }] }) }
  })
  assert.equal(response.stopReason, 'end_turn')
  const thoughts = h.updates.flatMap((n) => n.update.sessionUpdate === 'agent_thought_chunk' && n.update.content.type === 'text' ? [n.update.content.text] : [])
  assert.equal(thoughts.join(''), 'The user greets me; answer briefly.')
  assert.equal(messageText(h.updates), 'Hello!')
})

test('over /v1/acp a plan a tool reports in its progress arrives as a plan update with content, priority and status', async (t) => {
  const token = await mintToken()
  // A to-do tool as an application would write one: it reports the whole plan, then answers.
  const todo = defineTool({
    name: 'todo_write',
    description: 'Replace the task list',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    async execute (_args, ctx) {
      ctx.progress?.({ plan: [{ content: 'Read the notes', status: 'completed', priority: 'high' }, { content: 'Write the summary', status: 'in_progress' }] })
      return ok('2 tasks')
    }
  })
  const g = await startGateway({
    overrides: { ...jwtAuth(), agents: { default: { tools: ['todo_write'] } }, risk_profiles: { default: { auto_approve: ['todo_write'] } } },
    token,
    tools: [todo]
  })
  t.after(async () => { await g.close() })
  g.provider.enqueue({ toolCalls: [{ id: 'p1', name: 'todo_write', arguments: {} }] }, { text: 'Planned.' })
  const h = overSocket(`${g.url.replace(/^http/, 'ws')}/v1/acp`, token)
  const response = await h.run(async (ctx) => {
    await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
    const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    return await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'plan it' }] })
  })
  assert.equal(response.stopReason, 'end_turn')
  assert.deepEqual(updateKinds(h.updates), ['tool_call', 'tool_call_update:in_progress', 'plan', 'tool_call_update:completed', 'agent_message_chunk'])
  const plan = h.updates.find((u) => u.update.sessionUpdate === 'plan')?.update
  assert.deepEqual(plan, {
    sessionUpdate: 'plan',
    entries: [
      { content: 'Read the notes', priority: 'high', status: 'completed' },
      { content: 'Write the summary', priority: 'medium', status: 'in_progress' }
    ]
  })
})

test('a client that opts into edit is offered an edit option; choosing it with a replacement answers edit: the write does not run and the text is its result', async (t) => {
  const { g, token, acpUrl } = await jwtGateway(t)
  g.provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'out.txt', content: 'hi\n' } }] }, { text: 'Noted.' })
  const h = overSocket(acpUrl, token, () => ({ outcome: { outcome: 'selected', optionId: 'edit', _meta: { tollgate: { replacement: 'the user wrote out.txt by hand' } } } }))
  const { init, response } = await h.run(async (ctx) => {
    const init = await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {}, _meta: { tollgate: { edit: true } } })
    const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    return { init, response: await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'write it' }] }) }
  })
  assert.deepEqual(init._meta, { tollgate: { steering: false, edit: true } })
  assert.equal(response.stopReason, 'end_turn')
  assert.deepEqual(h.permissions.map((p) => p.options.map((o) => [o.optionId, o.kind])), [
    [['allow_once', 'allow_once'], ['allow_always', 'allow_always'], ['reject_once', 'reject_once'], ['edit', 'reject_once']]
  ])
  assert.deepEqual(h.permissions[0]?.options[3]?._meta, { tollgate: { decision: 'edit' } })
  assert.equal(existsSync(join(g.tenantWorkspace('acme'), 'out.txt')), false)
  const turns = (await g.http('GET', '/v1/turns')).body.items
  const turn = (await g.http('GET', `/v1/turns/${turns[0].turn_id as string}`)).body
  assert.deepEqual(turn.approvals.map((a: Record<string, string>) => [a.decision, a.decided_by, a.channel]), [['edit', 'acp:acme/alice', 'acp']])
  assert.equal(turn.tool_calls[0].output, 'the user wrote out.txt by hand')
  // The model reads the replacement as the call's result.
  assert.equal(g.provider.requests[1]?.body.messages.at(-1)?.content, 'the user wrote out.txt by hand')
})

test('an edit chosen without replacement text is not an answer: the request stays pending for the inbox', async (t) => {
  const { g, token, acpUrl } = await jwtGateway(t)
  g.provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'out.txt', content: 'hi\n' } }] }, { text: 'Done.' })
  const h = overSocket(acpUrl, token, () => ({ outcome: { outcome: 'selected', optionId: 'edit' } }))
  const response = await h.run(async (ctx) => {
    await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {}, _meta: { tollgate: { edit: true } } })
    const { sessionId } = await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    const prompt = ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'write it' }] })
    let pending: any[] = []
    await eventually(async () => {
      pending = (await g.http('GET', '/v1/approvals?status=pending')).body.items
      return pending.length === 1 && h.permissions.length === 1
    }, { what: 'the question to be asked and pending' })
    // A round trip on the same connection: the editor's answer, sent before it, has been handled.
    await ctx.request('session/new', { cwd: '/tmp', mcpServers: [] })
    assert.equal((await g.http('GET', '/v1/approvals?status=pending')).body.items.length, 1, 'still pending after the empty edit')
    assert.equal((await g.http('POST', `/v1/approvals/${pending[0].request_id as string}`, { decision: 'no' })).status, 200)
    return await prompt
  })
  assert.equal(response.stopReason, 'end_turn')
  const turns = (await g.http('GET', '/v1/turns')).body.items
  const turn = (await g.http('GET', `/v1/turns/${turns[0].turn_id as string}`)).body
  assert.deepEqual(turn.approvals.map((a: Record<string, string>) => [a.decision, a.channel]), [['no', 'rest']])
})
