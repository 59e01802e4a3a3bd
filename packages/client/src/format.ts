/** Display helpers shared by the browser page and the terminal client (platform-neutral). */

/** A result's output, plus its error when that says something the output does not already say. */
export function resultText (output: string, error: string | undefined): string {
  if (error === undefined || error === '' || output.includes(error)) return output
  return output === '' ? error : `${output}\n${error}`
}

/** Tools whose calls the gateway marks with its internal `approved` flag (set by the runtime, never by the model). */
const MARKER_TOOLS: ReadonlySet<string> = new Set(['shell'])

/** A call's arguments as the model gave them: without the runtime's `approved` marker, which is no one's to read. */
export function modelArguments (tool: string, args: Record<string, unknown>): Record<string, unknown> {
  if (!MARKER_TOOLS.has(tool) || !('approved' in args)) return args
  const { approved: _marker, ...rest } = args
  return rest
}
