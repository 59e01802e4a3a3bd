/**
 * What the gateway's listing routes answer: the principal's sessions, turns and pending
 * approvals, newest first, one page at a time (`next_cursor` fetches the next; null at the end).
 * Written by hand from the routes' contract until their schemas generate them into ./wire.ts.
 */
/** One argument exactly as the tool will receive it (invisible characters escaped as ‹U+XXXX›, breaks as ⏎). */
export interface ArgumentLine {
  name: string
  value: string
}

export interface ListPage<T> {
  items: T[]
  next_cursor: string | null
}

export interface SessionSummary {
  session_id: string
  agent: string
  created_at: string
  updated_at: string
  /** The session's running turn, if any. */
  active_turn_id: string | null
}

export interface TurnSummary {
  turn_id: string
  session_id: string
  agent: string
  status: string
  created_at: string
  updated_at: string
}

/** An approval request still waiting for an answer. */
export interface PendingApproval {
  request_id: string
  turn_id: string
  session_id: string
  call_id: string
  tool: string
  /** One-line scrubbed record: for lists, not for deciding. */
  summary: string
  /** The exact arguments: what the person deciding reads. */
  display: ArgumentLine[]
  /** The risk level the policy gave the call (e.g. low, medium, high). */
  risk?: string
  /** Why approval is needed: the policy rule that asked. */
  reason?: string
  requested_at: string
  expires_at: string
}

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
