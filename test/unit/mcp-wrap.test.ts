import { test } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { prefixedName, wrapMcpTool, type McpCall } from '../../src/mcp/wrap.js'
import { ok, type ToolContext } from '../../src/tools/contract.js'

const calls: Array<{ tool: string, args: Record<string, unknown> }> = []
const call: McpCall = async (tool, args) => {
  calls.push({ tool, args })
  return ok(`ran ${tool}`)
}
const ctx: ToolContext = { signal: new AbortController().signal, turnId: 't', sessionId: 's', callId: 'c', log: pino({ level: 'silent' }), workspaceDir: '/nonexistent', workspaceOwner: null, network: false }

test('a wrapper is named <server>__<tool>, carries extension provenance and calls the MCP tool by its own name', async () => {
  const tool = wrapMcpTool('docs', { name: 'pages.search', description: 'Search pages', inputSchema: { type: 'object', properties: { q: { type: 'string' } } } }, call)
  assert.ok(!('skip' in tool))
  assert.equal(tool.name, 'docs__pages_search')
  assert.deepEqual(tool.attribution, { provenance: 'extension', source: 'mcp:docs' })
  assert.equal((await tool.execute({ q: 'x' }, ctx)).output, 'ran pages.search')
  assert.deepEqual(calls.at(-1), { tool: 'pages.search', args: { q: 'x' } })
})

test('a wrapper validates arguments against the server\'s input schema', () => {
  const tool = wrapMcpTool('docs', { name: 'get', inputSchema: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] } }, call)
  assert.ok(!('skip' in tool))
  assert.equal(tool.validateArgs({ id: 3 }), null)
  assert.match(tool.validateArgs({}) ?? '', /must have required property 'id'/)
})

test('a definition without a description gets the default one', () => {
  const tool = wrapMcpTool('docs', { name: 'get' }, call)
  assert.ok(!('skip' in tool))
  assert.equal(tool.description, 'MCP tool')
  assert.deepEqual(tool.parameters, { type: 'object' })
})

test('a definition whose prefixed name exceeds 64 characters is not offered', () => {
  assert.equal(prefixedName('s', 'a/b'), 's__a_b')
  const result = wrapMcpTool('server', { name: 'x'.repeat(60) }, call)
  assert.ok('skip' in result)
  assert.match(result.skip, /longer than 64/)
})
