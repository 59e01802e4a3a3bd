import { Type, type Static } from '@sinclair/typebox'
import { ApprovalRisk, ArgumentDisplay } from './approval.js'
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

/**
 * The model's reasoning as it streams (Anthropic thinking, Responses reasoning summaries,
 * chat-completions `reasoning_content` / `reasoning`, `<think>` blocks): never part of
 * `text.delta` or `final_text`, scrubbed like text; absent when the agent has
 * `show_reasoning = false`.
 */
export const ReasoningDeltaEvent = Type.Object({
  kind: Type.Literal('reasoning.delta'),
  text: Type.String()
})

/**
 * The model call failed with a retryable error (after the provider's own retries) before anything
 * streamed, and goes to the agent's next fallback provider. The turn record's `provider` names the
 * provider that answered last.
 */
export const ModelFallbackEvent = Type.Object({
  kind: Type.Literal('model.fallback'),
  from: Type.String({ description: 'The provider that failed (a name under [providers])' }),
  to: Type.String({ description: 'The provider tried next' }),
  code: Type.String({ description: 'The failure\'s code (PROVIDER_ERROR, PROVIDER_UNAVAILABLE, PROVIDER_TIMEOUT)' }),
  reason: Type.String({ description: 'The failure, secrets scrubbed' })
})

export const ToolCallEvent = Type.Object({
  kind: Type.Literal('tool_call'),
  call_id: OpaqueId,
  provider_call_id: Type.Optional(Type.String()),
  name: ToolName,
  arguments: Arguments,
  status: Type.Literal('pending')
})

/**
 * What a running tool reports before its result: MCP progress notifications, or the latest output
 * line of a long-running shell command. Scrubbed, bounded and rate limited per call; never sent
 * after the call's `tool_result`.
 */
/** Entries of a reported plan kept at most; the rest are dropped. */
export const MAX_PLAN_ENTRIES = 50

/** One task of a plan a tool reported; the Agent Client Protocol's `PlanEntry` shape. */
export const PlanEntry = Type.Object({
  content: Type.String({ description: 'What the task is, secrets scrubbed, at most `turns.tool_progress.max_message_bytes`' }),
  priority: Type.Union([Type.Literal('high'), Type.Literal('medium'), Type.Literal('low')]),
  status: Type.Union([Type.Literal('pending'), Type.Literal('in_progress'), Type.Literal('completed')])
}, { title: 'PlanEntry' })
export type PlanEntry = Static<typeof PlanEntry>

export const ToolProgressEvent = Type.Object({
  kind: Type.Literal('tool.progress'),
  call_id: OpaqueId,
  progress: Type.Optional(Type.Number({ minimum: 0, description: 'Work done so far, as the tool counts it (MCP `progress`)' })),
  total: Type.Optional(Type.Number({ minimum: 0, description: 'Total work, when the tool knows it (MCP `total`)' })),
  message: Type.Optional(Type.String({
    description: 'A status line or output line, secrets scrubbed, at most `turns.tool_progress.max_message_bytes`'
  })),
  plan: Type.Optional(Type.Array(PlanEntry, {
    maxItems: MAX_PLAN_ENTRIES,
    description: 'The whole plan the tool reports (a to-do list), replacing the one it reported before; ACP sends it as a `plan` update'
  }))
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
    description: 'What to show the person deciding: each argument (path first) as the tool gets it, credentials as references (‹ghp_••••›)'
  }),
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
    description: 'The call of a client tool: run it with `arguments`, send the result (POST /v1/turns/{id}/tool-results, WS tool.result)'
  })),
  approval_kind: Type.Optional(Type.Literal('budget', {
    description: 'budget: a model call would pass a budget (yes raises it for this turn by its own size, no fails the turn); absent: a tool call'
  }))
})

export const ApprovalResolvedEvent = Type.Object({
  kind: Type.Literal('approval.resolved'),
  request_id: OpaqueId,
  call_id: OpaqueId,
  decision: ApprovalDecision,
  decided_by: Type.String({ description: 'Who answered and where: <surface>:<tenant>/<sub> (ws, rest, acp, ag-ui, ai-sdk), or runtime' })
})

/**
 * A person added a message while the turn runs (steering, `POST /v1/turns/{turn_id}/messages`). It
 * joins the model's history as a user message before the turn's next model call, in the order
 * given; written when it is queued, so a turn parked for a restart keeps it.
 */
export const UserMessageEvent = Type.Object({
  kind: Type.Literal('user.message'),
  message: Type.String({ description: 'The message, secrets scrubbed' }),
  n: Type.Integer({ minimum: 1, description: 'Its place among this turn\'s steering messages, from 1' }),
  sent_by: Type.Optional(Type.String({
    description: 'tenant/sub of the principal who sent it, when that is not the turn\'s own principal (a holder of `turns:steer`)'
  }))
})

export const IterationEvent = Type.Object({
  kind: Type.Literal('iteration'),
  n: Type.Integer({ minimum: 1 })
})

/**
 * Tokens of the turn's model calls as the provider reported them, summed. Absent when no call
 * reported usage: Tollgate never counts tokens itself.
 */
export const TokenUsage = Type.Object({
  prompt_tokens: Type.Integer({ minimum: 0 }),
  completion_tokens: Type.Integer({ minimum: 0 }),
  total_tokens: Type.Integer({ minimum: 0, description: 'prompt_tokens + completion_tokens' }),
  reported_calls: Type.Integer({ minimum: 1, description: 'Answered model calls whose usage is in the sums' }),
  unreported_calls: Type.Integer({
    minimum: 0, description: 'Answered model calls whose provider reported no usage: when above 0, the sums are a lower bound'
  }),
  cache_read_tokens: Type.Optional(Type.Integer({
    minimum: 0, description: 'Prompt tokens read from the provider\'s prompt cache (part of prompt_tokens); present when a call reported them'
  })),
  cache_write_tokens: Type.Optional(Type.Integer({
    minimum: 0, description: 'Prompt tokens written to the provider\'s prompt cache (part of prompt_tokens); present when a call reported them'
  })),
  reasoning_tokens: Type.Optional(Type.Integer({
    minimum: 0, description: 'Completion tokens spent on reasoning (part of completion_tokens); present when a call reported them'
  })),
  cost_usd: Type.Optional(Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
    description: 'USD at the configured prices (providers.<p>.pricing); null when a call\'s price or usage is unknown, never 0'
  }))
}, { title: 'TokenUsage' })
export type TokenUsage = Static<typeof TokenUsage>

const TerminalUsage = Type.Optional(TokenUsage)

/**
 * The turn continues after its gateway stopped (a restart, a deploy, or on PostgreSQL another
 * instance taking over a dead one's turn). Everything before it is as it was; what follows is the
 * turn going on from its last checkpoint.
 */
export const TurnResumedEvent = Type.Object({
  kind: Type.Literal('turn.resumed'),
  from_checkpoint: Type.Union([Type.Literal('model_call'), Type.Literal('approval_wait'), Type.Literal('tool_dispatch')], {
    description: 'Where the turn goes on: a model call made again, an approval waiting again, or a round of tool calls'
  }),
  checkpoint_seq: Type.Integer({ minimum: 0, description: 'The last event before the checkpoint the turn resumed from' })
})

export const TurnCompletedEvent = Type.Object({
  kind: Type.Literal('turn.completed'),
  final_text: Type.String(),
  usage: TerminalUsage
})

export const TurnCancelledEvent = Type.Object({
  kind: Type.Literal('turn.cancelled'),
  reason: Type.String(),
  usage: TerminalUsage
})

export const TurnFailedEvent = Type.Object({
  kind: Type.Literal('turn.failed'),
  code: Type.String(),
  message: Type.String(),
  usage: TerminalUsage
})

export const TurnEvent = Type.Union([
  TurnStartedEvent,
  TextDeltaEvent,
  ReasoningDeltaEvent,
  ModelFallbackEvent,
  ToolCallEvent,
  ToolProgressEvent,
  ToolResultEvent,
  ApprovalRequestedEvent,
  ApprovalResolvedEvent,
  IterationEvent,
  UserMessageEvent,
  TurnResumedEvent,
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
