/**
 * `agents.<name>.access`: a principal outside it gets 403 AGENT_FORBIDDEN on every way a turn
 * starts (POST /v1/turns, WS turn.start, AG-UI, AI SDK) and on GET /v1/tools, also for a session
 * bound to such an agent; nothing is created for a refusal. And the start-up warning about agents
 * that act unasked for every tenant.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { HttpAgent } from '@ag-ui/client'
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'

const READ_WRITE = ['turns:read', 'turns:write', 'approvals:answer']

/** The default agent is acme's only; `ops` needs acme and one of the scopes `agents:ops`, `admin`. */
async function start (t: TestContext): Promise<TestGateway> {
  const g = await startGateway({
    overrides: {
      ...jwtAuth(),
      agents: {
        default: { access: { tenants: ['acme'] } },
        ops: { provider: 'fake', access: { tenants: ['acme'], scopes: ['agents:ops', 'admin'] } }
      }
    }
  })
  t.after(() => g.close())
  return g
}

function aiSdkBody (chatId: string, text: string): Record<string, unknown> {
  return { id: chatId, messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text }] }], trigger: 'submit-message' }
}

function agUiBody (threadId: string, text: string): Record<string, unknown> {
  return { threadId, runId: 'run-1', messages: [{ id: 'u1', role: 'user', content: text }], tools: [], context: [], state: {} }
}

test('a principal of another tenant gets 403 AGENT_FORBIDDEN on every door that starts a turn and on the tool list, and nothing is created', async (t) => {
  const g = await start(t)
  const globex = await mintToken({ tenant: 'globex', sub: 'alice' })
  const auth = bearer(globex)
  const stream = { ...auth, accept: 'text/event-stream' }
  const refusals = {
    rest: await g.http('POST', '/v1/turns', { message: 'hi', session_id: 'chat-1' }, auth),
    restNamed: await g.http('POST', '/v1/turns', { message: 'hi', agent: 'ops' }, auth),
    agUi: await g.http('POST', '/v1/ag-ui', agUiBody('thread-1', 'hi'), stream),
    aiSdk: await g.http('POST', '/v1/ai-sdk/chat', aiSdkBody('chat-1', 'hi'), stream),
    tools: await g.http('GET', '/v1/tools', undefined, auth),
    toolsNamed: await g.http('GET', '/v1/tools?agent=ops', undefined, auth)
  }
  for (const [door, res] of Object.entries(refusals)) {
    assert.equal(res.status, 403, `${door}: ${JSON.stringify(res.body)}`)
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, door)
    assert.deepEqual([res.body.code, res.body.type], ['AGENT_FORBIDDEN', 'https://tollgate.dev/problems/agent-forbidden'], door)
  }
  const ws = await g.socket({ protocols: ['tollgate.v1', `bearer.${globex}`] })
  const frame = await ws.request({ type: 'turn.start', message: 'hi' })
  assert.deepEqual([frame.type, frame.code], ['error', 'AGENT_FORBIDDEN'])
  // The real clients surface the refusal as a failed run / chat.
  const agent = new HttpAgent({ url: `${g.url}/v1/ag-ui`, threadId: 'thread-1', headers: auth, initialMessages: [{ id: 'u1', role: 'user', content: 'hi' }] })
  await assert.rejects(agent.runAgent({ runId: 'run-1' }), /AGENT_FORBIDDEN/)
  const chat = new DefaultChatTransport<UIMessage>({ api: `${g.url}/v1/ai-sdk/chat`, headers: auth })
  await assert.rejects(chat.sendMessages({
    chatId: 'chat-1', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }], trigger: 'submit-message', messageId: undefined, abortSignal: undefined
  }), /AGENT_FORBIDDEN/)
  assert.equal(g.provider.requests.length, 0)
  assert.deepEqual((await g.http('GET', '/v1/sessions', undefined, auth)).body.items, [])
  assert.equal(g.gateway.turns.activeCount, 0)
})

test('a principal of the listed tenant uses the agent on every door that starts a turn and lists its tools', async (t) => {
  const g = await start(t)
  const acme = await mintToken({ tenant: 'acme', sub: 'alice' })
  const auth = bearer(acme)
  for (let i = 0; i < 4; i++) g.provider.enqueue({ text: 'hello' })
  const rest = await g.http('POST', '/v1/turns?wait=true', { message: 'hi' }, auth)
  assert.deepEqual([rest.status, rest.body.final_text], [200, 'hello'])
  const ws = await g.socket({ protocols: ['tollgate.v1', `bearer.${acme}`] })
  const accepted = await ws.request({ type: 'turn.start', message: 'hi' })
  assert.equal(accepted.type, 'turn.accepted')
  await ws.waitForTerminal(accepted.turn_id as string)
  const agent = new HttpAgent({ url: `${g.url}/v1/ag-ui`, threadId: 'thread-1', headers: auth, initialMessages: [{ id: 'u1', role: 'user', content: 'hi' }] })
  assert.equal((await agent.runAgent({ runId: 'run-1' })).result, 'hello')
  const chat = new DefaultChatTransport<UIMessage>({ api: `${g.url}/v1/ai-sdk/chat`, headers: auth })
  const stream = await chat.sendMessages({
    chatId: 'chat-1', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }], trigger: 'submit-message', messageId: undefined, abortSignal: undefined
  })
  let last: UIMessage | undefined
  for await (const m of readUIMessageStream({ stream })) last = m
  assert.deepEqual(last?.parts.flatMap((p) => p.type === 'text' ? [p.text] : []), ['hello'])
  const tools = await g.http('GET', '/v1/tools', undefined, auth)
  assert.deepEqual([tools.status, tools.body.agent], [200, 'default'])
})

test('access with tenants and scopes needs the listed tenant and at least one of the listed scopes', async (t) => {
  const g = await start(t)
  const cases: Array<[string, string, string[], boolean]> = [
    ['acme with admin', 'acme', [...READ_WRITE, 'admin'], true],
    ['acme with agents:ops', 'acme', [...READ_WRITE, 'agents:ops'], true],
    ['acme with neither scope', 'acme', READ_WRITE, false],
    ['globex with both scopes', 'globex', [...READ_WRITE, 'admin', 'agents:ops'], false]
  ]
  for (const [who, tenant, scopes, allowed] of cases) {
    const token = await mintToken({ tenant, sub: 'alice', scopes })
    if (allowed) g.provider.enqueue({ text: 'ok' })
    const started = await g.http('POST', '/v1/turns?wait=true', { message: 'hi', agent: 'ops' }, bearer(token))
    const listed = await g.http('GET', '/v1/tools?agent=ops', undefined, bearer(token))
    const expected = allowed ? [200, 'completed', 200, undefined] : [403, 'AGENT_FORBIDDEN', 403, 'AGENT_FORBIDDEN']
    assert.deepEqual([started.status, allowed ? started.body.status : started.body.code, listed.status, listed.body.code], expected, who)
  }
  assert.equal(g.provider.requests.length, 2)
})

test('a session bound to an agent its principal may no longer use refuses new turns with 403 AGENT_FORBIDDEN, named or not', async (t) => {
  const g = await start(t)
  const admin = await mintToken({ tenant: 'acme', sub: 'alice', scopes: [...READ_WRITE, 'admin'] })
  const plain = await mintToken({ tenant: 'acme', sub: 'alice', scopes: READ_WRITE })
  g.provider.enqueue({ text: 'ok' })
  const first = await g.http('POST', '/v1/turns?wait=true', { message: 'hi', agent: 'ops', session_id: 'ops-chat' }, bearer(admin))
  assert.equal(first.status, 200)
  const stream = { ...bearer(plain), accept: 'text/event-stream' }
  const attempts = {
    rest: await g.http('POST', '/v1/turns', { message: 'again', session_id: 'ops-chat' }, bearer(plain)),
    aiSdk: await g.http('POST', '/v1/ai-sdk/chat', aiSdkBody('ops-chat', 'again'), stream),
    agUi: await g.http('POST', '/v1/ag-ui', agUiBody('ops-chat', 'again'), stream)
  }
  for (const [door, res] of Object.entries(attempts)) assert.deepEqual([res.status, res.body.code], [403, 'AGENT_FORBIDDEN'], door)
  const ws = await g.socket({ protocols: ['tollgate.v1', `bearer.${plain}`] })
  const frame = await ws.request({ type: 'turn.start', message: 'again', session_id: 'ops-chat' })
  assert.deepEqual([frame.type, frame.code], ['error', 'AGENT_FORBIDDEN'])
  const session = await g.http('GET', '/v1/sessions/ops-chat', undefined, bearer(plain))
  assert.deepEqual(session.body.turn_ids, [first.body.turn_id])
  assert.equal(g.provider.requests.length, 1)
})

/** Agents acting unasked (shell auto-approved, or the profile's level "full"), open or narrowed to acme. */
const UNASKED_AGENTS = {
  tools: { shell: { sandbox: 'none' } },
  risk_profiles: { yolo: { auto_approve: ['shell', 'file_read'] }, full: { level: 'full' } },
  agents: {
    open_shell: { provider: 'fake', risk_profile: 'yolo' },
    open_full: { provider: 'fake', risk_profile: 'full' },
    acme_shell: { provider: 'fake', risk_profile: 'yolo', access: { tenants: ['acme'] } },
    scoped_shell: { provider: 'fake', risk_profile: 'yolo', access: { scopes: ['admin'] } },
    asks_first: { provider: 'fake', risk_profile: 'yolo', tools: ['file_read', 'file_write'] }
  }
}

async function startupWarnings (t: TestContext, overrides: Record<string, unknown>): Promise<Array<Record<string, any>>> {
  const logs: LogCapture = captureLogs('info')
  const g = await startGateway({ overrides, logger: logs.logger })
  t.after(() => g.close())
  return logs.lines().filter((l) => typeof l.msg === 'string' && l.msg.includes('open to every tenant'))
}

test('under JWT auth, each agent open to every tenant that runs shell or file_write unasked is named in one start-up warning', async (t) => {
  const warnings = await startupWarnings(t, { ...jwtAuth(), ...UNASKED_AGENTS })
  assert.deepEqual(warnings.map((w) => [w.level, w.agent, w.tools]), [
    [40, 'open_shell', ['shell']],
    [40, 'open_full', ['shell', 'file_write']],
    [40, 'scoped_shell', ['shell']]
  ])
  assert.match(warnings[0]?.msg as string, /set agents\.open_shell\.access\.tenants/)
})

test('an agent whose access names its tenants gets no start-up warning', async (t) => {
  const restricted = {
    ...jwtAuth(),
    tools: { shell: { sandbox: 'none' } },
    risk_profiles: { yolo: { auto_approve: ['shell'], level: 'supervised' } },
    agents: { acme_shell: { provider: 'fake', risk_profile: 'yolo', access: { tenants: ['acme'] } } }
  }
  assert.deepEqual(await startupWarnings(t, restricted), [])
})

test('without JWT auth (one local principal) no agent gets a start-up warning', async (t) => {
  assert.deepEqual(await startupWarnings(t, UNASKED_AGENTS), [])
})
