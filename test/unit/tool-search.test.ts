import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ActivatedToolSet } from '../../src/tools/scope/activated.js'
import { buildDeferredSection, createDeferredTools } from '../../src/tools/scope/deferred.js'
import { createToolSearchTool, NO_MATCH_TEXT, TOOL_SEARCH_TOOL } from '../../src/tools/scope/tool-search.js'
import { defineTool, ok, type Tool, type ToolContext } from '../../src/tools/contract.js'
import { pino } from 'pino'

function mcpTool (name: string, description: string): Tool {
  return defineTool({
    name,
    description,
    parameters: { type: 'object', properties: {} },
    attribution: { provenance: 'extension', source: `mcp:${name.split('__')[0] ?? ''}` },
    execute: async () => ok(name)
  })
}

const STUBS = [
  mcpTool('gh__list_issues', 'List the issues of a repository'),
  mcpTool('gh__create_issue', 'Create an issue in a repository'),
  mcpTool('wiki__search', 'Search wiki pages'),
  mcpTool('wiki__issue_log', 'Read the wiki change log')
]

const ctx: ToolContext = { signal: new AbortController().signal, turnId: 't', sessionId: 's', callId: 'c', log: pino({ level: 'silent' }), workspaceDir: '/nonexistent', workspaceOwner: null, network: false }

function setUp (): { search: Tool, activated: ActivatedToolSet } {
  const activated = new ActivatedToolSet()
  const deferred = createDeferredTools(STUBS, activated)
  return { search: createToolSearchTool(() => deferred), activated }
}

test('tool_search refuses an empty query', async () => {
  const { search } = setUp()
  assert.deepEqual(await search.execute({ query: '   ' }, ctx), { success: false, output: '', error: 'query parameter is required' })
})

test('select: activates the named tools and lists the ones it cannot find', async () => {
  const { search, activated } = setUp()
  const result = await search.execute({ query: 'select:gh__create_issue, ,nope' }, ctx)
  assert.equal(result.success, true)
  assert.equal(result.output, '<functions>\n<function>{"name": "gh__create_issue", "description": "Create an issue in a repository", "parameters": {"type":"object","properties":{}}}</function>\n</functions>\n\nNot found: nope')
  assert.deepEqual(activated.list().map((t) => t.name), ['gh__create_issue'])
})

test('select: with only unknown names reports them and activates nothing', async () => {
  const { search, activated } = setUp()
  const result = await search.execute({ query: 'select:missing' }, ctx)
  assert.equal(result.output, 'Not found: missing')
  assert.deepEqual(activated.list(), [])
})

test('a keyword search ranks stubs by how many query words they contain', async () => {
  const { search } = setUp()
  const result = await search.execute({ query: 'issue repository' }, ctx)
  const names = [...result.output.matchAll(/"name": "([^"]+)"/g)].map((m) => m[1])
  assert.deepEqual(names, ['gh__list_issues', 'gh__create_issue', 'wiki__issue_log'])
})

test('a keyword search is capped at max_results', async () => {
  const { search, activated } = setUp()
  await search.execute({ query: 'issue', max_results: 1 }, ctx)
  assert.deepEqual(activated.list().map((t) => t.name), ['gh__list_issues'])
})

test('a keyword search without matches succeeds and says so', async () => {
  const { search } = setUp()
  assert.deepEqual(await search.execute({ query: 'spreadsheet' }, ctx), { success: true, output: NO_MATCH_TEXT, error: null, data: { activated: [], found: [], not_found: [] } })
})

test('reactivation is idempotent: a second fetch reports nothing newly activated', async () => {
  const { search, activated } = setUp()
  const first = await search.execute({ query: 'select:wiki__search' }, ctx)
  const second = await search.execute({ query: 'select:wiki__search' }, ctx)
  assert.deepEqual((first.data as { activated: string[] }).activated, ['wiki__search'])
  assert.deepEqual((second.data as { activated: string[] }).activated, [])
  assert.equal(activated.list().length, 1)
})

test('tool_search outside a turn with deferred tools fails instead of guessing a set', async () => {
  assert.deepEqual(await TOOL_SEARCH_TOOL.execute({ query: 'select:gh__issues' }, ctx), { success: false, output: '', error: 'this turn has no deferred tools' })
})

test('the activated set resolves a unique suffix and refuses an ambiguous one', () => {
  const activated = new ActivatedToolSet()
  for (const t of STUBS) activated.activate(t)
  activated.activate(mcpTool('other__search', 'Search elsewhere'))
  assert.equal(activated.resolve('list_issues')?.name, 'gh__list_issues')
  assert.equal(activated.resolve('search'), undefined)
  assert.equal(activated.resolve('x__list_issues'), undefined)
})

test('the deferred section is empty when there is nothing to fetch', () => {
  assert.equal(buildDeferredSection([]), '')
  const activated = new ActivatedToolSet()
  for (const t of STUBS) activated.activate(t)
  assert.equal(createDeferredTools(STUBS, activated).section, '')
})

test('the deferred section lists every stub not yet activated and tells the model to use tool_search', () => {
  const activated = new ActivatedToolSet()
  activated.activate(STUBS[0] as Tool)
  const section = createDeferredTools(STUBS, activated).section
  assert.match(section, /^## Deferred Tools\n/)
  assert.match(section, /`tool_search`/)
  assert.match(section, /\n<available-deferred-tools>\ngh__create_issue - Create an issue in a repository\nwiki__search - Search wiki pages\nwiki__issue_log - Read the wiki change log\n<\/available-deferred-tools>$/)
})
