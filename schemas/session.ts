import { Type, type Static } from '@sinclair/typebox'
import { NextCursor, PageCursor, PageLimit } from './approval.js'
import { ClientId, OpaqueId, Timestamp } from './common.js'

export const HistoryToolCall = Type.Object({
  id: Type.String(),
  name: Type.String(),
  arguments: Type.String({ description: 'JSON text, as sent by the model' })
})

/** Provider-visible transcript entry (OpenAI chat shape). */
export const HistoryMessage = Type.Object({
  role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('tool')]),
  content: Type.Union([Type.String(), Type.Null()]),
  tool_calls: Type.Optional(Type.Array(HistoryToolCall)),
  tool_call_id: Type.Optional(Type.String()),
  name: Type.Optional(Type.String())
})
export type HistoryMessage = Static<typeof HistoryMessage>

/**
 * One `always` grant of a session: a whole tool, or (`command` set) exactly one command of a
 * command tool (`shell`), whitespace outside quotes normalised.
 */
export const ApprovalGrant = Type.Object({
  tool: Type.String(),
  command: Type.Optional(Type.String({ description: 'Set: only this exact command of the tool is allowed' }))
}, { additionalProperties: false, title: 'ApprovalGrant' })
export type ApprovalGrant = Static<typeof ApprovalGrant>

export const SessionParams = Type.Object({ id: ClientId }, { additionalProperties: false })

export const Session = Type.Object({
  session_id: Type.String(),
  agent: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
  turn_ids: Type.Array(Type.String()),
  always_allowed: Type.Array(ApprovalGrant, { description: 'The session\'s `always` grants: tools, then exact commands' }),
  always_allowed_tools: Type.Array(Type.String(), {
    description: 'The tools granted as a whole (the entries of always_allowed without a command)'
  }),
  history: Type.Array(HistoryMessage)
}, { title: 'Session' })
export type Session = Static<typeof Session>

export const SessionsQuery = Type.Object({
  limit: Type.Optional(PageLimit),
  cursor: Type.Optional(PageCursor)
}, { additionalProperties: false })

export const SessionSummary = Type.Object({
  session_id: Type.String(),
  agent: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
  active_turn_id: Type.Union([OpaqueId, Type.Null()], { description: 'The session\'s running turn, if any' })
}, { title: 'SessionSummary' })
export type SessionSummary = Static<typeof SessionSummary>

export const SessionsPage = Type.Object({
  items: Type.Array(SessionSummary, { description: 'Most recently updated session first' }),
  next_cursor: NextCursor
}, { title: 'SessionsPage' })
