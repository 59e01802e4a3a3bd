import { test } from 'node:test'
import assert from 'node:assert/strict'
import { deepMerge } from '../../src/core/config.js'
import { startGateway, shape, type TestGateway } from '../helpers/gateway.js'
import { advertised, httpServerConfig, runTurn, systemPrompt, toolResults } from '../helpers/mcp.js'
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/mcp/http-server.js'

const BUILTINS = ['shell', 'file_read', 'file_write', 'http_request']

async function deferredGateway (
  t: { after: (fn: () => Promise<void>) => void }, overrides: unknown = {}
): Promise<{ g: TestGateway, server: HttpMcpServer }> {
  const server = await startHttpMcpServer()
  t.after(async () => { await server.close() })
  const g = await startGateway({
    overrides: deepMerge({
      mcp: { deferred_loading: true, servers: { web: httpServerConfig(server.url) } },
      agents: { default: { mcp_bundles: ['web'] } },
      risk_profiles: { default: { level: 'full' } }
    }, overrides)
  })
  t.after(async () => { await g.close() })
  return { g, server }
}

test('with deferred loading the model sees tool_search and a Deferred Tools section instead of the MCP wrappers', async (t) => {
  const { g } = await deferredGateway(t)
  g.provider.enqueue({ text: 'hello' })
  await runTurn(g, { message: 'hi' })
  assert.deepEqual(advertised(g, 0), [...BUILTINS, 'tool_search'])
  const system = systemPrompt(g, 0)
  assert.match(system, /## Deferred Tools/)
  assert.match(system, /MUST fetch it with the `tool_search` tool/)
  assert.match(system, /"select:name1,name2"/)
  assert.match(system, /<available-deferred-tools>\nweb__echo - Echo the given text back\nweb__add - Add two numbers\n/)
})

test('tool_search select: activates a tool that the next iteration advertises and can call', async (t) => {
  const { g, server } = await deferredGateway(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'tool_search', arguments: { query: 'select:web__echo, web__nope' } }] },
    { toolCalls: [{ id: 'c2', name: 'web__echo', arguments: { text: 'found' } }] },
    { text: 'done' }
  )
  const { events } = await runTurn(g, { message: 'echo something' })
  const [search, echo] = toolResults(events)
  assert.equal(search?.status, 'ok')
  assert.equal(search?.output, '<functions>\n' +
    '<function>{"name": "web__echo", "description": "Echo the given text back", "parameters": {"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}</function>\n' +
    '</functions>\n\nNot found: web__nope')
  assert.equal(advertised(g, 0).includes('web__echo'), false)
  assert.deepEqual(advertised(g, 1), [...BUILTINS, 'tool_search', 'web__echo'])
  assert.equal(echo?.output, 'echo: found')
  assert.deepEqual(server.events, ['call echo'])
})

test('a keyword tool_search activates the best-ranked matches up to max_results', async (t) => {
  const { g } = await deferredGateway(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'tool_search', arguments: { query: 'weather city echo', max_results: 1 } }] },
    { text: 'ok' }
  )
  const { events } = await runTurn(g, { message: 'what is the weather' })
  assert.match(toolResults(events)[0]?.output ?? '', /^<functions>\n<function>\{"name": "web__weather_forecast"/)
  assert.deepEqual(advertised(g, 1), [...BUILTINS, 'tool_search', 'web__weather_forecast'])
})

test('a tool_search with no keyword match says so and activates nothing', async (t) => {
  const { g } = await deferredGateway(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'tool_search', arguments: { query: 'spreadsheet' } }] }, { text: 'none' })
  const { events } = await runTurn(g, { message: 'find it' })
  assert.equal(toolResults(events)[0]?.output, 'No matching deferred tools found.')
  assert.deepEqual(advertised(g, 1), [...BUILTINS, 'tool_search'])
})

test('a batch containing tool_search runs sequentially, and the tool it activates runs after it in the same batch', async (t) => {
  const { g } = await deferredGateway(t, { runtime_profiles: { default: { parallel_tools: true } } })
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'tool_search', arguments: { query: 'select:web__echo' } }, { id: 'c2', name: 'web__echo', arguments: { text: 'same batch' } }] },
    { text: 'done' }
  )
  const { events } = await runTurn(g, { message: 'go' })
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration',
    'tool_call:tool_search', 'tool_result:tool_search:ok',
    'tool_call:web__echo', 'tool_result:web__echo:ok',
    'iteration', 'turn.completed'
  ])
  assert.equal(toolResults(events)[1]?.output, 'echo: same batch')
})

test('a call after a tool_search that did not fetch its tool is refused as unknown', async (t) => {
  const { g, server } = await deferredGateway(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'tool_search', arguments: { query: 'select:web__add' } }, { id: 'c2', name: 'web__echo', arguments: { text: 'x' } }] },
    { text: 'done' }
  )
  const { events } = await runTurn(g, { message: 'go' })
  assert.equal(toolResults(events)[1]?.output, 'Unknown tool: web__echo')
  assert.equal(server.events.includes('call echo'), false)
})

test('an activated tool answers to its unique suffix', async (t) => {
  const { g } = await deferredGateway(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'tool_search', arguments: { query: 'select:web__echo' } }] },
    { toolCalls: [{ id: 'c2', name: 'echo', arguments: { text: 'short name' } }] },
    { text: 'done' }
  )
  const { events } = await runTurn(g, { message: 'go' })
  const echo = toolResults(events)[1]
  assert.equal(echo?.name, 'echo')
  assert.equal(echo?.output, 'echo: short name')
})

test('a denied MCP tool is neither listed as deferred nor found by tool_search', async (t) => {
  const { g, server } = await deferredGateway(t, { risk_profiles: { default: { excluded_tools: ['web__secret'] } } })
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'tool_search', arguments: { query: 'select:web__secret' } }, { id: 'c2', name: 'tool_search', arguments: { query: 'classified' } }] },
    { toolCalls: [{ id: 'c3', name: 'web__secret' }] },
    { text: 'nothing' }
  )
  const { events } = await runTurn(g, { message: 'reveal' })
  assert.equal(systemPrompt(g, 0).includes('web__secret'), false)
  assert.deepEqual(toolResults(events).map((r) => r.output), [
    'Not found: web__secret',
    'No matching deferred tools found.',
    'Tool not available in this turn: web__secret'
  ])
  assert.equal(server.events.includes('call secret'), false)
})

test('activations last for one turn: the next turn starts with only tool_search again', async (t) => {
  const { g } = await deferredGateway(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'tool_search', arguments: { query: 'select:web__echo' } }] },
    { text: 'fetched' },
    { text: 'second turn' }
  )
  const first = await runTurn(g, { message: 'fetch', session_id: 'ses-deferred' })
  assert.equal(first.events.at(-1)?.event.kind, 'turn.completed')
  await runTurn(g, { message: 'again', session_id: 'ses-deferred' })
  assert.deepEqual(advertised(g, 2), [...BUILTINS, 'tool_search'])
})

test('a turn that excludes tool_search gets no Deferred Tools section either', async (t) => {
  const { g } = await deferredGateway(t)
  g.provider.enqueue({ text: 'ok' })
  await runTurn(g, { message: 'hi', tools: { exclude: ['tool_search'] } })
  assert.deepEqual(advertised(g, 0), BUILTINS)
  assert.equal(systemPrompt(g, 0).includes('## Deferred Tools'), false)
})

test('GET /v1/tools lists the same MCP wrappers in eager and deferred mode, and never tool_search', async (t) => {
  const { g: deferred } = await deferredGateway(t)
  const server = await startHttpMcpServer()
  t.after(() => server.close())
  const eager = await startGateway({ overrides: { mcp: { servers: { web: httpServerConfig(server.url) } }, agents: { default: { mcp_bundles: ['web'] } } } })
  t.after(() => eager.close())
  const names = async (gw: TestGateway): Promise<string[]> => (await gw.http('GET', '/v1/tools')).body.tools.map((tool: { name: string }) => tool.name)
  const listed = await names(deferred)
  assert.deepEqual(listed, await names(eager))
  assert.equal(listed.includes('web__echo'), true)
  assert.equal(listed.includes('tool_search'), false)
})
