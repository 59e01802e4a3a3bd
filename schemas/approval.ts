import { Type, type Static } from '@sinclair/typebox'
import { ClientId, OpaqueId, Timestamp } from './common.js'

export const MAX_REPLACEMENT_CHARS = 65_536
/** The words a person gives with a denial, passed on to the model. */
export const MAX_DENIAL_REASON_CHARS = 2000

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

/**
 * Shell commands by their command (read-only pipelines low, high-risk patterns high, else
 * medium); other tools low when the call only reads, else medium.
 */
export const ApprovalRisk = Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')], {
  description: 'How much harm the call could do, as the policy classifies it (see docs/reference/approvals.md)'
})
export type ApprovalRisk = Static<typeof ApprovalRisk>

/** One argument as the person deciding reads it (src/approval/display.ts). */
export const ArgumentDisplay = Type.Object({
  name: Type.String(),
  value: Type.String({
    description: 'Exact and whole; invisible characters as ‹U+XXXX›, line breaks as ⏎ plus the break; only plain-token secrets masked'
  })
}, { title: 'ArgumentDisplay' })

/** An approval request still waiting for an answer. */
export const PendingApproval = Type.Object({
  request_id: OpaqueId,
  turn_id: OpaqueId,
  session_id: Type.String(),
  call_id: OpaqueId,
  tool: Type.String(),
  summary: Type.String({ description: 'One-line record of the scrubbed arguments (the audit\'s arguments_summary); not for deciding' }),
  display: Type.Array(ArgumentDisplay, { description: 'What to show the person deciding, as in the approval.requested event' }),
  risk: ApprovalRisk,
  reason: Type.String({ description: 'The policy rule that asked for approval, in words' }),
  rule: Type.Optional(Type.String({
    description: 'The permission rule that asked (`default`: no rule allows the call); absent without permission rules'
  })),
  needs: Type.Optional(Type.Array(Type.String(), {
    description: 'The parts of the call that need the answer, each with why: simple commands no rule allows, or what no rule can allow'
  })),
  requested_at: Timestamp,
  expires_at: Timestamp,
  client_tool: Type.Optional(Type.Literal(true, {
    description: 'Not a question: the call of a client tool waiting for the client\'s result (POST /v1/turns/{id}/tool-results)'
  })),
  approval_kind: Type.Optional(Type.Literal('budget', {
    description: 'budget: a model call would pass a budget (yes raises it for this turn by its own size, no fails the turn); absent: a tool call'
  }))
}, { title: 'PendingApproval' })
export type PendingApproval = Static<typeof PendingApproval>

export const MAX_PAGE_LIMIT = 100
export const DEFAULT_PAGE_LIMIT = 20

export const PageLimit = Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT, description: 'Items per page' })
export const PageCursor = Type.String({ minLength: 1, maxLength: 512, description: 'next_cursor of the previous page' })
export const NextCursor = Type.Union([Type.String(), Type.Null()], {
  description: 'Pass as cursor for the next page; null on the last page'
})

export const ApprovalsQuery = Type.Object({
  status: Type.Literal('pending', { description: 'Only pending requests are listed (answered ones are in each turn\'s approvals audit)' }),
  session_id: Type.Optional(ClientId),
  turn_id: Type.Optional(OpaqueId),
  limit: Type.Optional(PageLimit),
  cursor: Type.Optional(PageCursor)
}, { additionalProperties: false })
export type ApprovalsQuery = Static<typeof ApprovalsQuery>

export const ApprovalsPage = Type.Object({
  items: Type.Array(PendingApproval, { description: 'Newest request first' }),
  next_cursor: NextCursor
}, { title: 'ApprovalsPage' })
export type ApprovalsPage = Static<typeof ApprovalsPage>
