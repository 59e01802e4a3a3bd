/**
 * Queries of the gateway's listing routes (the principal's sessions, turns and pending approvals,
 * newest first, one page at a time: pass a page's `next_cursor` as `cursor` for the next one).
 * The pages themselves are the generated wire types `SessionsPage`, `TurnsPage`, `ApprovalsPage`.
 */

export interface ListQuery {
  limit?: number
  cursor?: string
}

/** Query string from defined values only, in a stable order. */
export function queryString (params: Record<string, string | number | undefined>): string {
  const parts: string[] = []
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined) parts.push(`${encodeURIComponent(name)}=${encodeURIComponent(String(value))}`)
  }
  return parts.length === 0 ? '' : `?${parts.join('&')}`
}
