import { Type, type Static } from '@sinclair/typebox'
import { ClientId, EventCursor, OpaqueId, Timestamp, ToolName } from './common.js'
import { NextCursor, PageCursor, PageLimit, PendingApproval } from './approval.js'
import { ApprovalDecision, EventEnvelope, TokenUsage, ToolCallStatus } from './events.js'
import { ClientTools } from './client-tools.js'

export const MAX_MESSAGE_CHARS = 100_000

export const ToolNarrowing = Type.Object({
  allow: Type.Optional(Type.Array(ToolName, { maxItems: 256, description: 'Only these tools (must already be admitted for the agent)' })),
  exclude: Type.Optional(Type.Array(ToolName, { maxItems: 256, description: 'Hide these tools for this turn' }))
}, { additionalProperties: false })

export const TurnRequestProperties = {
  session_id: Type.Optional(ClientId),
  agent: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$' })),
  message: Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS }),
  tools: Type.Optional(ToolNarrowing),
  client_tools: Type.Optional(ClientTools),
  interactive: Type.Optional(Type.Boolean({
    default: true,
    description: 'true: prompt-required calls wait for an answer, also while nobody is connected; false: they are auto-denied'
  })),
  approval_timeout_ms: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 2_147_483_647,
    description: 'Approval wait of this turn (default: the agent\'s), capped at turns.max_approval_timeout_ms'
  })),
  detach: Type.Optional(Type.Boolean({ default: false, description: 'true: the turn survives its owner connection closing' })),
  owner_connection: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'WebSocket connection_id that owns the turn and answers its approvals' })),
  idempotency_key: Type.Optional(ClientId),
  budget_usd: Type.Optional(Type.Number({
    exclusiveMinimum: 0, description: 'USD this turn may spend on model calls; at most budgets.turn_usd when that is set'
  }))
}

export const TurnRequest = Type.Object(TurnRequestProperties, { additionalProperties: false, title: 'TurnRequest' })
export type TurnRequest = Static<typeof TurnRequest>

export const TurnStartQuery = Type.Object({
  wait: Type.Optional(Type.Boolean({ description: 'Hold the request until the turn ends; closing it cancels the turn' }))
}, { additionalProperties: false })

/** The `Accept: text/event-stream` answer of POST /v1/turns. */
export const TurnEventStream = Type.String({
  description: 'Server-sent events, one per turn event: `id: <seq>`, `event: <kind>`, `data: <EventEnvelope JSON>`; ' +
    'the stream ends after the terminal event (turn.completed, turn.cancelled or turn.failed)'
})

export const TurnStatus = Type.Union([
  Type.Literal('running'),
  Type.Literal('completed'),
  Type.Literal('cancelled'),
  Type.Literal('failed'),
  Type.Literal('interrupted')
])
export type TurnStatus = Static<typeof TurnStatus>

export const TurnAccepted = Type.Object({
  turn_id: OpaqueId,
  session_id: Type.String(),
  status: TurnStatus,
  events_url: Type.String()
}, { title: 'TurnAccepted' })
export type TurnAccepted = Static<typeof TurnAccepted>

export const ToolCallRecord = Type.Object({
  call_id: OpaqueId,
  provider_call_id: Type.Optional(Type.String()),
  iteration: Type.Integer({ minimum: 1 }),
  index: Type.Integer({ minimum: 0, description: 'Position of the call in the model response' }),
  name: ToolName,
  arguments: Type.Record(Type.String(), Type.Unknown()),
  status: ToolCallStatus,
  success: Type.Boolean(),
  output: Type.String(),
  error: Type.Optional(Type.String()),
  duration_ms: Type.Integer({ minimum: 0 }),
  receipt: Type.Optional(Type.String()),
  truncated: Type.Optional(Type.Boolean()),
  original_bytes: Type.Optional(Type.Integer({
    minimum: 0, description: 'With `truncated`: UTF-8 bytes of the whole (scrubbed) result before any bound'
  }))
})
export type ToolCallRecord = Static<typeof ToolCallRecord>

export const ApprovalAuditEntry = Type.Object({
  request_id: OpaqueId,
  call_id: OpaqueId,
  tool: ToolName,
  arguments_summary: Type.String(),
  decision: ApprovalDecision,
  decided_by: Type.String({ description: 'Who answered and where: <surface>:<tenant>/<sub> (ws, rest, acp, ag-ui, ai-sdk), or runtime' }),
  channel: Type.String({ description: 'websocket | rest | acp | sse | ag-ui | ai-sdk | runtime' }),
  principal: Type.String({ description: 'tenant/sub of the operator who answered, or runtime when the gateway decided (auto-deny, expired, cancelled)' }),
  rule: Type.Optional(Type.String({ description: 'The permission rule that asked (`default`: no rule allowed the call); absent without enforced rules' })),
  policy_version: Type.Optional(Type.String({ description: 'The permission rules\' version (a hash of the rules) that asked' })),
  timestamp: Timestamp
})
export type ApprovalAuditEntry = Static<typeof ApprovalAuditEntry>

export const TurnError = Type.Object({ code: Type.String(), message: Type.String() })

export const Turn = Type.Object({
  turn_id: OpaqueId,
  session_id: Type.String(),
  agent: Type.String(),
  status: TurnStatus,
  created_at: Timestamp,
  updated_at: Timestamp,
  final_text: Type.Optional(Type.String()),
  error: Type.Optional(TurnError),
  iterations: Type.Integer({ minimum: 0 }),
  usage: Type.Optional(TokenUsage),
  provider: Type.Optional(Type.String({
    description: 'The provider (a name under [providers]) that answered the turn\'s last model call: a fallback after a switch'
  })),
  tool_calls: Type.Array(ToolCallRecord),
  approvals: Type.Array(ApprovalAuditEntry),
  pending_approvals: Type.Array(PendingApproval, { description: 'Approval requests waiting for an answer now, in model order' }),
  last_seq: Type.Integer({ minimum: 0 })
}, { title: 'Turn' })
export type Turn = Static<typeof Turn>

export const EventsQuery = Type.Object({
  after_seq: Type.Optional(EventCursor)
}, { additionalProperties: false })

export const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.String({
    maxLength: 32, description: 'Event stream only: resume after this seq (sent by EventSource clients on reconnect); wins over after_seq; a decimal integer from 0 to 2^53 - 1'
  }))
})

export const EventsPage = Type.Object({
  turn_id: OpaqueId,
  status: TurnStatus,
  events: Type.Array(EventEnvelope)
}, { title: 'EventsPage' })
export type EventsPage = Static<typeof EventsPage>

export const CancelResult = Type.Object({
  turn_id: OpaqueId,
  status: TurnStatus
}, { title: 'CancelResult' })

export const TurnsQuery = Type.Object({
  session_id: Type.Optional(ClientId),
  status: Type.Optional(TurnStatus),
  limit: Type.Optional(PageLimit),
  cursor: Type.Optional(PageCursor)
}, { additionalProperties: false })
export type TurnsQuery = Static<typeof TurnsQuery>

export const TurnSummary = Type.Object({
  turn_id: OpaqueId,
  session_id: Type.String(),
  agent: Type.String(),
  status: TurnStatus,
  created_at: Timestamp,
  updated_at: Timestamp
}, { title: 'TurnSummary' })
export type TurnSummary = Static<typeof TurnSummary>

export const TurnsPage = Type.Object({
  items: Type.Array(TurnSummary, { description: 'Newest turn first' }),
  next_cursor: NextCursor
}, { title: 'TurnsPage' })
