/**
 * What one tool call returns, and its two shapes. Apart from the tool contract (contract.ts
 * re-exports it) so a process that only runs file operations (the file worker) loads no schema
 * compiler.
 */

export interface ToolResult {
  success: boolean
  output: string
  error?: string | null
  /** Structured output; never shown to the model. */
  data?: unknown
}

export function ok (output: string, data?: unknown): ToolResult {
  return data === undefined ? { success: true, output, error: null } : { success: true, output, error: null, data }
}

export function fail (error: string, output = ''): ToolResult {
  return { success: false, output, error }
}
