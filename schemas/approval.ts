import { Type, type Static } from '@sinclair/typebox'
import { OpaqueId } from './common.js'

export const MAX_REPLACEMENT_CHARS = 65_536

/** What an operator can answer; `edit` needs `replacement`, which becomes the tool's result. */
export const OperatorDecision = Type.Union([
  Type.Literal('yes'),
  Type.Literal('no'),
  Type.Literal('always'),
  Type.Literal('edit')
])
export type OperatorDecision = Static<typeof OperatorDecision>

export const ApprovalAnswer = Type.Object({
  decision: OperatorDecision,
  replacement: Type.Optional(Type.String({ maxLength: MAX_REPLACEMENT_CHARS }))
}, { additionalProperties: false, title: 'ApprovalAnswer' })
export type ApprovalAnswer = Static<typeof ApprovalAnswer>

export const ApprovalParams = Type.Object({ request_id: OpaqueId }, { additionalProperties: false })

export const ApprovalAnswerResult = Type.Object({
  request_id: OpaqueId,
  turn_id: OpaqueId,
  decision: OperatorDecision
}, { title: 'ApprovalAnswerResult' })
