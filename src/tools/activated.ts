/**
 * Tools activated during a turn (deferred MCP wrappers resolved by tool_search). Shared by the
 * turn and any delegated sub-turn it grants them to, so lookup and activation agree.
 */
import type { Tool } from './tool.js'

export class ActivatedToolSet {
  private readonly tools = new Map<string, Tool>()

  /** Returns true when the tool was not active before. */
  activate (tool: Tool): boolean {
    if (this.tools.has(tool.name)) return false
    this.tools.set(tool.name, tool)
    return true
  }

  /** Exact name, else the unique activated `server__tool` whose part after the first `__` equals `name`. */
  resolve (name: string): Tool | undefined {
    const exact = this.tools.get(name)
    if (exact !== undefined || name.includes('__')) return exact
    let found: Tool | undefined
    for (const [full, tool] of this.tools) {
      const at = full.indexOf('__')
      if (at !== -1 && full.slice(at + 2) === name) {
        if (found !== undefined) return undefined
        found = tool
      }
    }
    return found
  }

  list (): Tool[] {
    return [...this.tools.values()]
  }
}
