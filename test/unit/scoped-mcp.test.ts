import { test } from 'node:test'
import assert from 'node:assert/strict'
import { TollgateError } from '../../src/core/errors.js'
import type { RiskProfileConfig, ToolFilterGroup } from '../../schemas/config.js'
import { loadConfig } from '../../src/core/config.js'
import { ToolCatalog } from '../../src/tools/catalog.js'
import { assembleScopedRegistry, assembleScopedTools, type AssembleOptions, type ToolNarrowing } from '../../src/tools/scope/scoped.js'
import { defineTool, ok, type Tool } from '../../src/tools/contract.js'
import { resolveAgent } from '../../src/service/agent-resolution.js'

function tool (name: string, source = 'builtin'): Tool {
  return defineTool({
    name,
    description: `${name} tool`,
    parameters: { type: 'object', properties: {} },
    attribution: source === 'builtin' ? { provenance: 'native', source } : { provenance: 'extension', source },
    execute: async () => ok(name)
  })
}

const MCP = [tool('gh__issues', 'mcp:gh'), tool('gh__secret', 'mcp:gh'), tool('wiki__search', 'mcp:wiki')]

// Loaded once: the real defaults, then each test varies the risk profile and groups directly.
const BASE = resolveAgent(loadConfig({ env: {}, overrides: { agents: { default: { tools: ['read', 'write'] } } } }), 'default')

function options (overrides: {
  risk?: Partial<RiskProfileConfig>, deferred?: boolean, groups?: ToolFilterGroup[], narrowing?: ToolNarrowing,
  message?: string
} = {}): AssembleOptions {
  const catalog = new ToolCatalog()
  catalog.add(tool('read'))
  catalog.add(tool('write'))
  return {
    catalog,
    agent: BASE.agent,
    risk: { ...BASE.risk, ...overrides.risk },
    mcp: { tools: MCP, deferred: overrides.deferred ?? false, groups: overrides.groups ?? [] },
    ...(overrides.narrowing === undefined ? {} : { narrowing: overrides.narrowing }),
    ...(overrides.message === undefined ? {} : { message: overrides.message })
  }
}

function names (tools: readonly Tool[]): string[] {
  return tools.map((t) => t.name)
}

test('assembly without an MCP offer grants no MCP tools', () => {
  const { mcp: _mcp, ...withoutMcp } = options()
  const scoped = assembleScopedTools(withoutMcp)
  assert.deepEqual(names(scoped.registry.list()), ['read', 'write'])
  assert.equal(scoped.deferred, null)
})

test('eager assembly registers every admitted MCP wrapper after the built-ins', () => {
  const scoped = assembleScopedTools(options())
  assert.deepEqual(names(scoped.registry.list()), ['read', 'write', 'gh__issues', 'gh__secret', 'wiki__search'])
  assert.equal(scoped.activated, null)
})

test('the listing shows the same wrappers in both loading modes and no tool_search', () => {
  assert.deepEqual(names(assembleScopedRegistry(options({ deferred: true })).list()), names(assembleScopedRegistry(options()).list()))
  assert.equal(assembleScopedRegistry(options({ deferred: true })).get('tool_search'), undefined)
})

test('deferred assembly registers tool_search instead of the wrappers and keeps them as stubs', () => {
  const scoped = assembleScopedTools(options({ deferred: true }))
  assert.deepEqual(names(scoped.registry.list()), ['read', 'write', 'tool_search'])
  assert.deepEqual([...scoped.deferred?.stubs.keys() ?? []], ['gh__issues', 'gh__secret', 'wiki__search'])
  assert.deepEqual(scoped.activated?.list(), [])
})

test('a denied MCP tool is left out of the deferred prompt section and the searchable stubs', () => {
  const scoped = assembleScopedTools(options({ deferred: true, risk: { excluded_tools: ['GH__Secret '] } }))
  assert.equal(scoped.deferred?.stubs.has('gh__secret'), false)
  assert.equal(scoped.deferred?.section.includes('gh__secret'), false)
  assert.equal(scoped.registry.isExcluded('gh__secret'), true)
})

test('a non-empty risk allowed_tools admits the names it lists and every server__tool name', () => {
  const scoped = assembleScopedTools(options({ risk: { allowed_tools: ['read'] } }))
  assert.deepEqual(names(scoped.registry.list()), ['read', 'gh__issues', 'gh__secret', 'wiki__search'])
})

test('a per-run allow narrows MCP tools strictly, without the server__tool auto-admit', () => {
  const scoped = assembleScopedTools(options({ risk: { allowed_tools: ['read'] }, narrowing: { allow: ['read', 'wiki__search'] } }))
  assert.deepEqual(names(scoped.registry.list()), ['read', 'wiki__search'])
})

test('a per-run allow cannot reach past the denylist: naming a denied tool is refused as unknown', () => {
  assert.throws(
    () => assembleScopedTools(options({ risk: { excluded_tools: ['wiki__search'] }, narrowing: { allow: ['wiki__search'] } })),
    (err: unknown) => err instanceof TollgateError && err.code === 'UNKNOWN_TOOL' && err.detail?.includes('wiki__search') === true
  )
  const scoped = assembleScopedTools(options({ risk: { excluded_tools: ['wiki__search'] }, narrowing: { allow: ['gh__issues'] } }))
  assert.deepEqual(names(scoped.registry.list()), ['gh__issues'])
  assert.equal(scoped.registry.isExcluded('wiki__search'), true)
})

test('a per-run allow may name tool_search when deferred loading offers stubs', () => {
  const scoped = assembleScopedTools(options({ deferred: true, narrowing: { allow: ['tool_search', 'gh__issues'] } }))
  assert.deepEqual(names(scoped.registry.list()), ['tool_search'])
  assert.deepEqual([...scoped.deferred?.stubs.keys() ?? []], ['gh__issues'])
})

test('tools a filter group hides are excluded for the turn, not just left unadvertised', () => {
  const scoped = assembleScopedTools(options({ groups: [{ mode: 'dynamic', tools: ['wiki__*'], keywords: ['wiki'] }], message: 'no keyword here' }))
  assert.deepEqual(names(scoped.registry.list()), ['read', 'write'])
  assert.equal(scoped.registry.isExcluded('wiki__search'), true)
  assert.equal(scoped.registry.isExcluded('gh__issues'), true)
})

test('an always group pre-activates its deferred stubs and the section lists only the rest', () => {
  const scoped = assembleScopedTools(options({ deferred: true, groups: [{ mode: 'always', tools: ['gh__*'], keywords: [] }, { mode: 'dynamic', tools: ['wiki__search'], keywords: ['wiki'] }], message: 'search the WIKI' }))
  assert.deepEqual(names(scoped.activated?.list() ?? []), ['gh__issues', 'gh__secret'])
  assert.match(scoped.deferred?.section ?? '', /<available-deferred-tools>\nwiki__search - wiki__search tool\n<\/available-deferred-tools>/)
})

test('deferred assembly with no admitted stub offers no tool_search', () => {
  const scoped = assembleScopedTools(options({ deferred: true, risk: { excluded_tools: ['gh__issues', 'gh__secret', 'wiki__search'] } }))
  assert.deepEqual(names(scoped.registry.list()), ['read', 'write'])
  assert.equal(scoped.deferred, null)
})
