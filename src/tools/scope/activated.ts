/**
 * Tools activated during a turn (deferred MCP wrappers resolved by tool_search). Shared by the
 * turn and any delegated sub-turn it grants them to, so lookup and activation agree.
 */
import type { Tool } from '../contract.js'

/** The deferred-tool lookup stub; a batch containing it never runs in parallel. */
export const TOOL_SEARCH = 'tool_search'

/**
 * Exact name, else the unique `server__tool` whose part after the first `__` equals `name`
 * (only for names without `__`); an ambiguous suffix resolves to nothing.
 */
export function resolveToolName (tools: ReadonlyMap<string, Tool>, name: string): Tool | undefined {
  const exact = tools.get(name)
  if (exact !== undefined || name.includes('__')) return exact
  let found: Tool | undefined
  for (const [full, tool] of tools) {
    const at = full.indexOf('__')
    if (at !== -1 && full.slice(at + 2) === name) {
      if (found !== undefined) return undefined
      found = tool
    }
  }
  return found
}

export class ActivatedToolSet {
  private readonly tools = new Map<string, Tool>()

  /** Returns true when the tool was not active before. */
  activate (tool: Tool): boolean {
    if (this.tools.has(tool.name)) return false
    this.tools.set(tool.name, tool)
    return true
  }

  has (name: string): boolean {
    return this.tools.has(name)
  }

  resolve (name: string): Tool | undefined {
    return resolveToolName(this.tools, name)
  }

  list (): Tool[] {
    return [...this.tools.values()]
  }
}
