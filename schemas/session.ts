import { Type, type Static } from '@sinclair/typebox'
import { ClientId, Timestamp } from './common.js'

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

export const SessionParams = Type.Object({ id: ClientId }, { additionalProperties: false })

export const Session = Type.Object({
  session_id: Type.String(),
  agent: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
  turn_ids: Type.Array(Type.String()),
  always_allowed_tools: Type.Array(Type.String()),
  history: Type.Array(HistoryMessage)
}, { title: 'Session' })
export type Session = Static<typeof Session>
