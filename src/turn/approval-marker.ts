/**
 * The runtime's `approved` marker of `shell` calls: set by the approval gate, read by the shell's
 * own policy (medium-risk commands run only with it). It is the runtime's, not the model's, so
 * nothing a person or a client reads shows it: the approval request and the `tool_call` event
 * carry the call as the model asked for it.
 */

/** Tools whose `approved` argument is set by the runtime only, never by the model. */
const APPROVAL_MARKER_TOOLS: ReadonlySet<string> = new Set(['shell'])

export function withMarker (name: string, args: Record<string, unknown>, approved: boolean): Record<string, unknown> {
  return APPROVAL_MARKER_TOOLS.has(name) ? { ...args, approved } : args
}

/** The call as the model asked for it, without the runtime's marker. */
export function withoutMarker (name: string, args: Record<string, unknown>): Record<string, unknown> {
  if (!APPROVAL_MARKER_TOOLS.has(name)) return args
  const { approved: _approved, ...rest } = args
  return rest
}
