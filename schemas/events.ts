import { Type, type Static } from '@sinclair/typebox'
import { OpaqueId, Timestamp, ToolName } from './common.js'

/**
 * Terminal status of one model tool call. `cancelled`: never ran (hook cancel, or the turn was
 * cancelled before it started); `interrupted`: started, then cut off by cancellation.
 */
export const ToolCallStatus = Type.Union([
  Type.Literal('ok'),
  Type.Literal('error'),
  Type.Literal('denied'),
  Type.Literal('replaced'),
  Type.Literal('deduplicated'),
  Type.Literal('cancelled'),
  Type.Literal('interrupted')
])
export type ToolCallStatus = Static<typeof ToolCallStatus>

export const ApprovalDecision = Type.Union([
  Type.Literal('yes'),
  Type.Literal('no'),
  Type.Literal('always'),
  Type.Literal('edit'),
  Type.Literal('auto-deny'),
  Type.Literal('expired'),
  Type.Literal('cancelled')
])
export type ApprovalDecision = Static<typeof ApprovalDecision>

const Arguments = Type.Record(Type.String(), Type.Unknown(), { description: 'Tool arguments, secrets scrubbed' })

export const TurnStartedEvent = Type.Object({
  kind: Type.Literal('turn.started'),
  session_id: Type.String(),
  agent: Type.String()
})

export const TextDeltaEvent = Type.Object({
  kind: Type.Literal('text.delta'),
  text: Type.String()
})

export const ToolCallEvent = Type.Object({
  kind: Type.Literal('tool_call'),
  call_id: OpaqueId,
  provider_call_id: Type.Optional(Type.String()),
  name: ToolName,
  arguments: Arguments,
  status: Type.Literal('pending')
})

export const ToolResultEvent = Type.Object({
  kind: Type.Literal('tool_result'),
  call_id: OpaqueId,
  name: ToolName,
  success: Type.Boolean(),
  status: ToolCallStatus,
  output: Type.String({ description: 'Result, secrets scrubbed, cut once to the tighter bound (bytes): `[... N of M bytes truncated ...]`' }),
  error: Type.Optional(Type.String()),
  duration_ms: Type.Integer({ minimum: 0 }),
  receipt: Type.Optional(Type.String()),
  truncated: Type.Optional(Type.Boolean({ description: 'Present (true) when the model or this output saw less than the whole result' })),
  original_bytes: Type.Optional(Type.Integer({
    minimum: 0, description: 'With `truncated`: UTF-8 bytes of the whole (scrubbed) result before any bound'
  }))
})

/** One argument as the person deciding reads it (src/approval/display.ts). */
export const ArgumentDisplay = Type.Object({
  name: Type.String(),
  value: Type.String({
    description: 'Exact and whole; invisible characters as ‹U+XXXX›, line breaks as ⏎ plus the break; only plain-token secrets masked'
  })
}, { title: 'ArgumentDisplay' })

export const ApprovalRequestedEvent = Type.Object({
  kind: Type.Literal('approval.requested'),
  request_id: OpaqueId,
  call_id: OpaqueId,
  name: ToolName,
  arguments: Type.Record(Type.String(), Type.Unknown(), {
    description: 'Tool arguments, secrets scrubbed: for programs, not for deciding'
  }),
  summary: Type.String({ description: 'One-line record of the scrubbed arguments, as kept in the approval audit; not for deciding' }),
  display: Type.Array(ArgumentDisplay, {
    description: 'What to show the person deciding: every argument exactly as the tool will receive it (path first, then by name)'
  }),
  expires_at: Timestamp
})

export const ApprovalResolvedEvent = Type.Object({
  kind: Type.Literal('approval.resolved'),
  request_id: OpaqueId,
  call_id: OpaqueId,
  decision: ApprovalDecision,
  decided_by: Type.String()
})

export const IterationEvent = Type.Object({
  kind: Type.Literal('iteration'),
  n: Type.Integer({ minimum: 1 })
})

export const TurnCompletedEvent = Type.Object({
  kind: Type.Literal('turn.completed'),
  final_text: Type.String()
})

export const TurnCancelledEvent = Type.Object({
  kind: Type.Literal('turn.cancelled'),
  reason: Type.String()
})

export const TurnFailedEvent = Type.Object({
  kind: Type.Literal('turn.failed'),
  code: Type.String(),
  message: Type.String()
})

export const TurnEvent = Type.Union([
  TurnStartedEvent,
  TextDeltaEvent,
  ToolCallEvent,
  ToolResultEvent,
  ApprovalRequestedEvent,
  ApprovalResolvedEvent,
  IterationEvent,
  TurnCompletedEvent,
  TurnCancelledEvent,
  TurnFailedEvent
], { title: 'TurnEvent' })
export type TurnEvent = Static<typeof TurnEvent>
export type TurnEventKind = TurnEvent['kind']
export type TerminalTurnEvent = Static<typeof TurnCompletedEvent> | Static<typeof TurnCancelledEvent> | Static<typeof TurnFailedEvent>

export const TERMINAL_EVENT_KINDS: ReadonlySet<TurnEventKind> = new Set(['turn.completed', 'turn.cancelled', 'turn.failed'])

/** One event as stored in a turn's log and sent to clients. */
export const EventEnvelope = Type.Object({
  turn_id: OpaqueId,
  seq: Type.Integer({ minimum: 1 }),
  ts: Timestamp,
  event: TurnEvent
}, { title: 'EventEnvelope' })
export type EventEnvelope = Static<typeof EventEnvelope>
