/**
 * MCP tool definitions → Tollgate tools named `<server>__<tool>`, with extension provenance
 * (`mcp:<server>`). A wrapper holds no client: it calls through its server connection, so a
 * wrapper handed to a turn keeps working across reconnects.
 */
import { defineTool, type JsonSchema, type Tool, type ToolContext, type ToolResult } from '../tools/contract.js'

export const MAX_DESCRIPTION_CHARS = 2048
export const MAX_SCHEMA_CHARS = 65_536
const DEFAULT_DESCRIPTION = 'MCP tool'

export interface McpToolDefinition {
  name: string
  description?: string
  title?: string
  inputSchema?: unknown
  /** MCP tool annotations; only `readOnlyHint` is used (a server the operator configured is trusted for it). */
  annotations?: { readOnlyHint?: boolean }
}

export type McpCall = (tool: string, args: Record<string, unknown>, ctx: ToolContext) => Promise<ToolResult>

/** Tool names are limited to [A-Za-z0-9_-]; MCP also allows `.` and `/`, which map to `_`. */
export function prefixedName (server: string, tool: string): string {
  return `${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`
}

function inputSchema (def: McpToolDefinition): JsonSchema {
  const s = def.inputSchema
  return typeof s === 'object' && s !== null && !Array.isArray(s) ? s as JsonSchema : { type: 'object' }
}

/** Returns the wrapper, or why this definition cannot be offered. */
export function wrapMcpTool (server: string, def: McpToolDefinition, call: McpCall): Tool | { skip: string } {
  const name = prefixedName(server, def.name)
  if (name.length > 64) return { skip: `name ${name} is longer than 64 characters` }
  const parameters = inputSchema(def)
  if (JSON.stringify(parameters).length > MAX_SCHEMA_CHARS) return { skip: `input schema is larger than ${MAX_SCHEMA_CHARS} characters` }
  const text = def.description ?? def.title ?? ''
  const description = text.trim() === '' ? DEFAULT_DESCRIPTION : text.slice(0, MAX_DESCRIPTION_CHARS)
  return defineTool({
    name,
    description,
    parameters,
    attribution: { provenance: 'extension', source: `mcp:${server}` },
    // MCP's default for a missing hint is "not read-only", and so is Tollgate's for any tool.
    effects: def.annotations?.readOnlyHint === true ? 'read' : 'write',
    execute: async (args, ctx) => await call(def.name, args, ctx)
  })
}
