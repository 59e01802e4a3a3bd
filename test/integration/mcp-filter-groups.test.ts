import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { advertised, httpServerConfig, runTurn, systemPrompt, toolResults } from '../helpers/mcp.js'
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/mcp/http-server.js'

const BUILTINS = ['shell', 'file_read', 'file_write', 'http_request']

async function gatewayWithGroups (
  t: { after: (fn: () => Promise<void>) => void },
  options: { deferred: boolean, groups: unknown[], excluded?: string[] }
): Promise<{ g: TestGateway, server: HttpMcpServer }> {
  const server = await startHttpMcpServer()
  t.after(async () => { await server.close() })
  const g = await startGateway({
    overrides: {
      mcp: { deferred_loading: options.deferred, servers: { web: httpServerConfig(server.url) } },
      agents: { default: { mcp_bundles: ['web'] } },
      runtime_profiles: { default: { tool_filter_groups: options.groups } },
      risk_profiles: { default: { level: 'full', excluded_tools: options.excluded ?? [] } }
    }
  })
  t.after(async () => { await g.close() })
  return { g, server }
}

test('an always group pre-activates its deferred MCP tools so the first request already advertises them', async (t) => {
  const { g } = await gatewayWithGroups(t, {
    deferred: true,
    groups: [{ mode: 'always', tools: ['web__echo'] }, { mode: 'dynamic', tools: ['web__weather_*'], keywords: ['weather'] }]
  })
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'web__echo', arguments: { text: 'direct' } }] }, { text: 'done' })
  const { events } = await runTurn(g, { message: 'what is the weather' })
  assert.deepEqual(advertised(g, 0), [...BUILTINS, 'tool_search', 'web__echo'])
  assert.equal(toolResults(events)[0]?.output, 'echo: direct')
  const system = systemPrompt(g, 0)
  assert.match(system, /<available-deferred-tools>\nweb__weather_forecast - Forecast the weather for a city\n<\/available-deferred-tools>/)
  assert.equal(system.includes('web__echo -'), false)
})

test('a dynamic group exposes its MCP tools only in turns whose message contains one of its keywords', async (t) => {
  const { g, server } = await gatewayWithGroups(t, { deferred: false, groups: [{ mode: 'dynamic', tools: ['web__weather_*'], keywords: ['Weather'] }] })
  g.provider.enqueue({ text: 'sunny' })
  await runTurn(g, { message: 'What is the WEATHER in Oslo?' })
  assert.deepEqual(advertised(g, 0), [...BUILTINS, 'web__weather_forecast'])

  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'web__weather_forecast', arguments: { city: 'Oslo' } }] }, { text: 'no' })
  const { events } = await runTurn(g, { message: 'say hi' })
  assert.deepEqual(advertised(g, 1), BUILTINS)
  assert.equal(toolResults(events)[0]?.output, 'Tool not available in this turn: web__weather_forecast')
  assert.equal(server.events.includes('call weather_forecast'), false)
})

test('a filter group does not grant a denied tool: it stays unadvertised and unrunnable even when a group matches it', async (t) => {
  const { g, server } = await gatewayWithGroups(t, { deferred: true, groups: [{ mode: 'always', tools: ['web__*'] }], excluded: ['web__secret'] })
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'web__secret' }, { id: 'c2', name: 'tool_search', arguments: { query: 'select:web__secret' } }] },
    { text: 'denied' }
  )
  const { events } = await runTurn(g, { message: 'reveal the secret' })
  const names = advertised(g, 0)
  assert.equal(names.includes('web__echo'), true)
  assert.equal(names.includes('web__secret'), false)
  assert.deepEqual(toolResults(events).map((r) => r.output), ['Tool not available in this turn: web__secret', 'Not found: web__secret'])
  assert.equal(server.events.includes('call secret'), false)
})

test('filter groups never hide built-in tools, only MCP tools no group matches', async (t) => {
  const { g } = await gatewayWithGroups(t, { deferred: false, groups: [{ mode: 'always', tools: ['web__echo', 'shell'] }] })
  g.provider.enqueue({ text: 'ok' })
  await runTurn(g, { message: 'hi' })
  assert.deepEqual(advertised(g, 0), [...BUILTINS, 'web__echo'])
})
