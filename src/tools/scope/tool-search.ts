/**
 * `tool_search`: resolves deferred MCP stubs into the turn's activated set and returns their
 * definitions, so the model can call them from then on. `select:a,b` fetches exact names; any
 * other query ranks stubs by how many of its words occur in their name and description.
 */
import { TOOL_SEARCH } from './activated.js'
import { defineTool, fail, ok, type DeferredToolView, type Tool, type ToolContext } from '../contract.js'

export const DEFAULT_MAX_RESULTS = 5
export const MAX_RESULTS_LIMIT = 50
export const NO_MATCH_TEXT = 'No matching deferred tools found.'

function selectByName (deferred: DeferredToolView, list: string): { found: Tool[], notFound: string[] } {
  const names = [...new Set(list.split(',').map((n) => n.trim()).filter((n) => n !== ''))]
  const found: Tool[] = []
  const notFound: string[] = []
  for (const name of names) {
    const tool = deferred.stubs.get(name)
    if (tool === undefined) notFound.push(name)
    else found.push(tool)
  }
  return { found, notFound }
}

export function searchByKeywords (stubs: Iterable<Tool>, query: string, maxResults: number): Tool[] {
  const terms = query.toLowerCase().split(/\s+/).filter((t) => t !== '')
  const ranked: Array<{ tool: Tool, hits: number, order: number }> = []
  let order = 0
  for (const tool of stubs) {
    const haystack = `${tool.name} ${tool.description}`.toLowerCase()
    const hits = terms.filter((t) => haystack.includes(t)).length
    if (hits > 0) ranked.push({ tool, hits, order })
    order += 1
  }
  ranked.sort((a, b) => b.hits - a.hits || a.order - b.order)
  return ranked.slice(0, maxResults).map((r) => r.tool)
}

/** One `<function>` line per tool, in the shape models are trained to read tool definitions in. */
export function renderFunctions (tools: readonly Tool[]): string {
  const lines = tools.map((t) => `<function>{"name": ${JSON.stringify(t.name)}, "description": ${JSON.stringify(t.description)}, "parameters": ${JSON.stringify(t.parameters)}}</function>`)
  return `<functions>\n${lines.map((l) => `${l}\n`).join('')}</functions>\n`
}

/**
 * `deferredOf` finds the deferred set of the call's turn. The gateway uses one tool_search for
 * every turn (TOOL_SEARCH_TOOL): a tool built per turn would compile its schema per turn, and the
 * shared ajv instance keeps every compiled schema.
 */
export function createToolSearchTool (deferredOf: (ctx: ToolContext) => DeferredToolView | null): Tool {
  return defineTool<{ query?: unknown, max_results?: unknown }>({
    name: TOOL_SEARCH,
    description: 'Fetch deferred tools so they can be called. Query "select:name1,name2" fetches those exact tools; ' +
      'any other query searches tool names and descriptions by keywords. Returns the definitions of the tools fetched.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', maxLength: 2000, description: '"select:name1,name2" or search keywords' },
        max_results: { type: 'integer', minimum: 1, maximum: MAX_RESULTS_LIMIT, description: `Keyword search only; default ${DEFAULT_MAX_RESULTS}` }
      },
      required: ['query']
    },
    attribution: { provenance: 'native', source: 'runtime' },
    turnScoped: true,
    // It only changes which tools this turn can call; calling them is gated on its own.
    effects: 'read',
    async execute (args, ctx) {
      const deferred = deferredOf(ctx)
      if (deferred === null) return fail('this turn has no deferred tools')
      const query = typeof args.query === 'string' ? args.query.trim() : ''
      if (query === '') return fail('query parameter is required')
      const maxResults = typeof args.max_results === 'number' ? args.max_results : DEFAULT_MAX_RESULTS

      let found: Tool[]
      let notFound: string[] = []
      if (query.startsWith('select:')) {
        ({ found, notFound } = selectByName(deferred, query.slice('select:'.length)))
      } else {
        found = searchByKeywords(deferred.stubs.values(), query, maxResults)
        if (found.length === 0) return ok(NO_MATCH_TEXT, { activated: [], found: [], not_found: [] })
      }
      const activated = found.filter((t) => deferred.activated.activate(t)).map((t) => t.name)
      const parts = found.length === 0 ? [] : [renderFunctions(found)]
      if (notFound.length > 0) parts.push(`${found.length === 0 ? '' : '\n'}Not found: ${notFound.join(', ')}`)
      return ok(parts.join(''), { activated, found: found.map((t) => t.name), not_found: notFound })
    }
  })
}

/** The tool_search of every turn and sub-turn: it works on the deferred set of the calling turn. */
export const TOOL_SEARCH_TOOL = createToolSearchTool((ctx) => ctx.turn?.deferred ?? null)
