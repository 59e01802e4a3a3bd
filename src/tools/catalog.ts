/**
 * Tool factory: every tool the runtime can offer at all, built once at start from config.
 * Which of them a given turn sees is decided by the scoped registry (scoped.ts), never here.
 */
import type { Tool } from './contract.js'

export class ToolCatalog {
  private readonly tools = new Map<string, Tool>()

  add (tool: Tool): void {
    if (this.tools.has(tool.name)) throw new Error(`tool ${JSON.stringify(tool.name)} is registered twice`)
    this.tools.set(tool.name, tool)
  }

  get (name: string): Tool | undefined {
    return this.tools.get(name)
  }

  has (name: string): boolean {
    return this.tools.has(name)
  }

  list (): Tool[] {
    return [...this.tools.values()]
  }
}
