import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deepMerge } from '../../src/core/config.js'
import { startGateway, shape, type TestGateway } from '../helpers/gateway.js'
import { advertised, httpServerConfig, runTurn, stdioServerConfig, toolResults } from '../helpers/mcp.js'
import { eventually } from '../helpers/eventually.js'
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/mcp/http-server.js'

const FULL = { risk_profiles: { default: { level: 'full' } } }
/** A stdio fixture child compiles the SDK through tsx before it answers; a loaded machine is slow at that. */
const STDIO = { connect_timeout_ms: 60_000 }

/** A gateway whose default agent bundles the in-process HTTP fixture as server `web`. */
async function withHttpServer (
  t: { after: (fn: () => Promise<void>) => void }, overrides: unknown = {}
): Promise<{ g: TestGateway, server: HttpMcpServer }> {
  const server = await startHttpMcpServer()
  t.after(async () => { await server.close() })
  const g = await startGateway({
    overrides: deepMerge({ mcp: { servers: { web: httpServerConfig(server.url) } }, agents: { default: { mcp_bundles: ['web'] } }, ...FULL }, overrides)
  })
  t.after(async () => { await g.close() })
  return { g, server }
}

test('a stdio MCP server\'s tools run in a turn under <server>__<tool> names', async (t) => {
  const g = await startGateway({ overrides: { mcp: { ...STDIO, servers: { files: stdioServerConfig() } }, agents: { default: { mcp_bundles: ['files'] } }, ...FULL } })
  t.after(() => g.close())
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'files__echo', arguments: { text: 'hi' } }] }, { text: 'done' })
  const { events } = await runTurn(g, { message: 'echo hi' })
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:files__echo', 'tool_result:files__echo:ok', 'iteration', 'turn.completed'])
  assert.equal(toolResults(events)[0]?.output, 'echo: hi')
  const spec = g.provider.requests[0]?.body.tools?.find((s) => s.function.name === 'files__echo')
  assert.deepEqual(spec?.function, {
    name: 'files__echo',
    description: 'Echo the given text back',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }
  })
})

test('GET /v1/tools lists MCP tools with extension provenance and their server as source', async (t) => {
  const { g } = await withHttpServer(t)
  const res = await g.http('GET', '/v1/tools')
  assert.equal(res.status, 200)
  const echo = res.body.tools.find((tool: { name: string }) => tool.name === 'web__echo')
  assert.equal(echo.provenance, 'extension')
  assert.equal(echo.source, 'mcp:web')
  assert.equal(res.body.tools.find((tool: { name: string }) => tool.name === 'shell').provenance, 'native')
})

test('an MCP result marked isError becomes a failed tool result carrying the server\'s text', async (t) => {
  const { g } = await withHttpServer(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'web__fail' }] }, { text: 'it failed' })
  const { events } = await runTurn(g, { message: 'try it' })
  const result = toolResults(events)[0]
  assert.equal(result?.status, 'error')
  assert.equal(result?.success, false)
  assert.equal(result?.output, 'Error: the tool broke')
  assert.equal(g.provider.requests[1]?.body.messages.at(-1)?.content, 'Error: the tool broke')
})

test('an MCP result with structured content reaches the model as its text content', async (t) => {
  const { g } = await withHttpServer(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'web__add', arguments: { a: 2, b: 3 } }] }, { text: '5' })
  const { events } = await runTurn(g, { message: 'add' })
  assert.equal(toolResults(events)[0]?.output, 'sum is 5')
  assert.equal(g.provider.requests[1]?.body.messages.at(-1)?.content, 'sum is 5')
})

test('an agent without mcp_bundles gets no MCP tools even when a server is connected', async (t) => {
  const { g } = await withHttpServer(t, { agents: { plain: { provider: 'fake' } } })
  const listing = await g.http('GET', '/v1/tools?agent=plain')
  assert.deepEqual(listing.body.tools.map((tool: { name: string }) => tool.name), ['shell', 'file_read', 'file_write', 'http_request'])
  g.provider.enqueue({ text: 'hello' })
  await runTurn(g, { message: 'hi', agent: 'plain' })
  assert.equal(advertised(g, 0).some((n) => n.includes('__')), false)
})

test('an MCP tool in excluded_tools is neither advertised nor run', async (t) => {
  const { g, server } = await withHttpServer(t, { risk_profiles: { default: { excluded_tools: ['web__secret'] } } })
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'web__secret' }] }, { text: 'no' })
  const { events } = await runTurn(g, { message: 'tell me' })
  assert.equal(advertised(g, 0).includes('web__secret'), false)
  assert.equal(advertised(g, 0).includes('web__echo'), true)
  assert.equal(toolResults(events)[0]?.output, 'Tool not available in this turn: web__secret')
  assert.equal(server.events.includes('call secret'), false)
})

test('a non-empty risk allowed_tools still admits the bundled MCP tools', async (t) => {
  const { g } = await withHttpServer(t, { risk_profiles: { default: { allowed_tools: ['file_read'] } } })
  g.provider.enqueue({ text: 'ok' })
  await runTurn(g, { message: 'hi' })
  const names = advertised(g, 0)
  assert.equal(names.includes('file_read'), true)
  assert.equal(names.includes('shell'), false)
  assert.equal(names.includes('web__echo'), true)
})

test('a per-run tools.allow is a strict intersection that admits only the MCP tools it names', async (t) => {
  const { g } = await withHttpServer(t, { risk_profiles: { default: { allowed_tools: ['file_read'] } } })
  g.provider.enqueue({ text: 'ok' })
  await runTurn(g, { message: 'hi', tools: { allow: ['web__echo'] } })
  assert.deepEqual(advertised(g, 0), ['web__echo'])
})

test('a per-run tools.allow naming an MCP tool the agent does not have is refused', async (t) => {
  const { g } = await withHttpServer(t)
  const res = await g.http('POST', '/v1/turns', { message: 'hi', tools: { allow: ['web__nope'] } })
  assert.equal(res.status, 400)
  assert.equal(res.body.code, 'UNKNOWN_TOOL')
  assert.match(res.body.detail, /web__nope/)
})

test('MCP tools go through the approval gate like every other tool', async (t) => {
  const { g, server } = await withHttpServer(t, { risk_profiles: { default: { level: 'supervised' } } })
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'web__echo', arguments: { text: 'x' } }] }, { text: 'denied' })
  const { events } = await runTurn(g, { message: 'echo', interactive: false })
  assert.equal(toolResults(events)[0]?.status, 'denied')
  assert.equal(server.events.includes('call echo'), false)
})

test('cancelling a turn cancels the running MCP request on the server', async (t) => {
  const { g, server } = await withHttpServer(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'web__wait' }] })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'wait' })
  await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'tool_call', 20_000)
  await eventually(() => server.events.includes('call wait'), { what: 'the server sees the call' })
  ws.send({ type: 'cancel', turn_id: accepted.turn_id })
  const events = await ws.waitForTerminal(accepted.turn_id, 20_000)
  assert.equal(events.at(-1)?.event.kind, 'turn.cancelled')
  assert.equal(toolResults(events)[0]?.status, 'interrupted')
  await eventually(() => server.events.includes('cancelled wait'), { what: 'the server sees the cancellation' })
})

test('an MCP call that outlives the server\'s timeout_ms fails with a clear error', async (t) => {
  const server = await startHttpMcpServer()
  t.after(() => server.close())
  const g = await startGateway({
    overrides: { mcp: { servers: { web: httpServerConfig(server.url, { timeout_ms: 200 }) } }, agents: { default: { mcp_bundles: ['web'] } }, ...FULL }
  })
  t.after(() => g.close())
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'web__wait' }] }, { text: 'too slow' })
  const { events } = await runTurn(g, { message: 'wait' })
  const result = toolResults(events)[0]
  assert.equal(result?.status, 'error')
  assert.match(result?.output ?? '', /MCP server "web" did not answer within 200 ms/)
  assert.equal(events.at(-1)?.event.kind, 'turn.completed')
})

test('an HTTP MCP server receives the configured headers, secrets taken from the gateway environment', async (t) => {
  const server = await startHttpMcpServer()
  t.after(() => server.close())
  const g = await startGateway({
    env: { WEB_MCP_TOKEN: 'Bearer s3cret' },
    overrides: {
      mcp: { servers: { web: httpServerConfig(server.url, { headers: { 'X-Team': 'blue' }, headers_from_env: { Authorization: 'WEB_MCP_TOKEN' } }) } },
      agents: { default: { mcp_bundles: ['web'] } }
    }
  })
  t.after(() => g.close())
  assert.equal(server.headers.length > 0, true)
  for (const h of server.headers) {
    assert.equal(h['x-team'], 'blue')
    assert.equal(h.authorization, 'Bearer s3cret')
  }
})

test('a stdio MCP server gets the environment its config hands it and nothing else of the gateway\'s', async (t) => {
  process.env.TOLLGATE_TEST_UNSHARED = 'gateway-only'
  t.after(() => { delete process.env.TOLLGATE_TEST_UNSHARED })
  const g = await startGateway({
    env: { FILES_TOKEN: 'tok-123' },
    overrides: {
      mcp: { ...STDIO, servers: { files: stdioServerConfig({ env: { GREETING: 'hello' }, envFrom: { TOKEN: 'FILES_TOKEN' } }) } },
      agents: { default: { mcp_bundles: ['files'] } },
      ...FULL
    }
  })
  t.after(() => g.close())
  g.provider.enqueue({
    toolCalls: [
      { id: 'c1', name: 'files__env', arguments: { name: 'GREETING' } },
      { id: 'c2', name: 'files__env', arguments: { name: 'TOKEN' } },
      { id: 'c3', name: 'files__env', arguments: { name: 'TOLLGATE_TEST_UNSHARED' } }
    ]
  }, { text: 'seen' })
  const { events } = await runTurn(g, { message: 'env' })
  assert.deepEqual(toolResults(events).map((r) => r.output), ['hello', 'tok-123', '(unset)'])
})

test('an MCP server that fails to start leaves the gateway serving, its tools absent and /readyz degraded', async (t) => {
  const g = await startGateway({
    overrides: {
      mcp: { servers: { broken: { transport: 'stdio', command: '/nonexistent/tollgate-mcp-server' } } },
      agents: { default: { mcp_bundles: ['broken'] } }
    }
  })
  t.after(() => g.close())
  const ready = await g.http('GET', '/readyz')
  assert.equal(ready.status, 200)
  assert.deepEqual(ready.body, { status: 'degraded' })
  const listing = await g.http('GET', '/v1/tools')
  assert.deepEqual(listing.body.tools.map((tool: { name: string }) => tool.name), ['shell', 'file_read', 'file_write', 'http_request'])
  g.provider.enqueue({ text: 'still here' })
  const { events } = await runTurn(g, { message: 'hi' })
  assert.equal(events.at(-1)?.event.kind, 'turn.completed')
})

test('a stdio MCP server that exits is started again and its tools work afterwards', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-mcp-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const log = join(dir, 'server.log')
  const g = await startGateway({
    overrides: {
      mcp: { ...STDIO, reconnect_initial_ms: 20, servers: { files: stdioServerConfig({ log }) } },
      agents: { default: { mcp_bundles: ['files'] } },
      ...FULL
    }
  })
  t.after(() => g.close())
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'files__pid' }, { id: 'c2', name: 'files__exit' }] }, { text: 'bye' })
  const first = await runTurn(g, { message: 'pid, then exit' })
  const pid = toolResults(first.events)[0]?.output
  assert.match(pid ?? '', /^\d+$/)
  await eventually(() => g.gateway.mcp.status()[0]?.connects === 2 && g.gateway.mcp.status()[0]?.state === 'ready', { what: 'the server is reconnected', timeoutMs: 60_000 })

  g.provider.enqueue({ toolCalls: [{ id: 'c3', name: 'files__pid' }] }, { text: 'again' })
  const second = await runTurn(g, { message: 'pid again' })
  const after = toolResults(second.events)[0]
  assert.equal(after?.status, 'ok')
  assert.notEqual(after?.output, pid)
  assert.deepEqual((await readFile(log, 'utf8')).trim().split('\n'), ['call pid', 'call exit', 'call pid'])
})

test('an HTTP MCP server that was down at start is connected once it answers, and its tools appear', async (t) => {
  const probe = await startHttpMcpServer()
  const { port, url } = probe
  await probe.close()
  const g = await startGateway({
    overrides: {
      mcp: { reconnect_initial_ms: 20, reconnect_max_ms: 100, connect_timeout_ms: 1000, servers: { web: httpServerConfig(url) } },
      agents: { default: { mcp_bundles: ['web'] } }
    }
  })
  t.after(() => g.close())
  assert.deepEqual((await g.http('GET', '/readyz')).body, { status: 'degraded' })
  const server = await startHttpMcpServer({ port })
  t.after(() => server.close())
  await eventually(async () => (await g.http('GET', '/readyz')).body.status === 'ready', { what: 'the server is connected', timeoutMs: 60_000 })
  const listing = await g.http('GET', '/v1/tools')
  assert.equal(listing.body.tools.some((tool: { name: string }) => tool.name === 'web__echo'), true)
})

test('after an HTTP MCP server restarts and forgets the session, the next call starts a new session and still runs', async (t) => {
  const first = await startHttpMcpServer()
  const { port } = first
  const g = await startGateway({
    overrides: { mcp: { servers: { web: httpServerConfig(first.url) } }, agents: { default: { mcp_bundles: ['web'] } }, ...FULL }
  })
  t.after(() => g.close())
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'web__echo', arguments: { text: 'before' } }] }, { text: 'ok' })
  assert.equal(toolResults((await runTurn(g, { message: 'echo' })).events)[0]?.output, 'echo: before')
  await first.close()
  const second = await startHttpMcpServer({ port })
  t.after(() => second.close())

  g.provider.enqueue({ toolCalls: [{ id: 'c2', name: 'web__echo', arguments: { text: 'after' } }] }, { text: 'ok' })
  const { events } = await runTurn(g, { message: 'echo again' })
  assert.equal(toolResults(events)[0]?.output, 'echo: after')
  assert.deepEqual(second.events, ['call echo'])
  assert.equal(g.gateway.mcp.status()[0]?.connects, 2)
})
