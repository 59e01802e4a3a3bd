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

/** "expires in 1:05", "expires in 2 h 03 min", or "expired" once the time has passed. */
export function timeLeft (expiresAt: string, now: number): { text: string, expired: boolean } {
  const ms = Date.parse(expiresAt) - now
  if (Number.isNaN(ms)) return { text: 'expiry unknown', expired: false }
  if (ms <= 0) return { text: 'expired', expired: true }
  const seconds = Math.ceil(ms / 1000)
  if (seconds >= 3600) {
    const minutes = Math.floor((seconds % 3600) / 60)
    return { text: `expires in ${Math.floor(seconds / 3600)} h ${String(minutes).padStart(2, '0')} min`, expired: false }
  }
  return { text: `expires in ${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`, expired: false }
}
