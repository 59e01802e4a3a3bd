/**
 * Request bodies of the protocol adapters: AG-UI `RunAgentInput` (POST /v1/ag-ui) and the AI SDK
 * chat request that `DefaultChatTransport` sends (POST /v1/ai-sdk/chat). Both protocols send the
 * whole conversation on every request and add fields over time, so messages and unknown fields
 * are accepted loosely and bounded by count and by the body limit; what Tollgate reads from them
 * (ids, the last user message, approval answers) is checked exactly in src/adapters/.
 */
import { ClientTools } from './client-tools.js'
import { Type, type Static } from '@sinclair/typebox'
import { ClientId, Problem } from './common.js'

/** More messages than any conversation a person typed; the body limit bounds their size. */
export const MAX_ADAPTER_MESSAGES = 1000
/** Approval answers one request may carry (Tollgate asks one at a time; a few spare for clients that batch). */
export const MAX_RESUME_ENTRIES = 16

/** A client-chosen id (ClientId) with its own description. */
function clientId (description: string): ReturnType<typeof Type.String> {
  return Type.String({ minLength: ClientId.minLength, maxLength: ClientId.maxLength, pattern: ClientId.pattern, description })
}

const LooseObject = Type.Object({}, { additionalProperties: true })

export const AgUiMessage = Type.Object({
  id: Type.String({ maxLength: 256 }),
  role: Type.String({ maxLength: 32, description: 'user, assistant, system, developer, tool, activity or reasoning' }),
  content: Type.Optional(Type.Unknown({ description: 'A string, or (user messages) an array of input parts; only `text` parts are read' }))
}, { additionalProperties: true, title: 'AgUiMessage' })

export const AgUiResumeEntry = Type.Object({
  interruptId: Type.String({ minLength: 1, maxLength: 128, description: 'The `request_id` of the approval request (the interrupt id)' }),
  status: Type.Union([Type.Literal('resolved'), Type.Literal('cancelled')], { description: '`cancelled` answers the approval with `no`' }),
  payload: Type.Optional(Type.Unknown({
    description: '`{decision: "yes"|"no"|"always"|"edit", replacement?}` (Tollgate\'s own answer) or `{approved: boolean}`'
  })),
  metadata: Type.Optional(LooseObject)
}, { additionalProperties: false, title: 'AgUiResumeEntry' })
export type AgUiResumeEntry = Static<typeof AgUiResumeEntry>

export const AgUiRunInput = Type.Object({
  threadId: clientId('The Tollgate session id (created by the first run of a thread)'),
  runId: clientId('Echoed in RUN_STARTED/RUN_FINISHED; a new run uses it as the turn\'s idempotency key'),
  protocolVersion: Type.Optional(Type.String({ maxLength: 32 })),
  parentRunId: Type.Optional(Type.String({ maxLength: 128 })),
  state: Type.Optional(Type.Unknown({ description: 'Ignored: Tollgate keeps no shared agent state' })),
  messages: Type.Array(AgUiMessage, {
    maxItems: MAX_ADAPTER_MESSAGES,
    description: 'Only the last message is read: a user message, or tool messages with frontend tool results (Tollgate keeps the session history itself)'
  }),
  tools: Type.Optional(Type.Array(Type.Unknown(), {
    maxItems: 256,
    description: 'Frontend tools `{name, description, parameters}`: the turn\'s client tools. A call ends the run after TOOL_CALL_END; ' +
      'the next run sends the result as a tool message (role "tool", toolCallId) as its last message'
  })),
  context: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 256, description: 'Ignored' })),
  forwardedProps: Type.Optional(Type.Unknown({
    description: '`{tollgate: {approvals: "interrupt"|"custom"}}` picks how approval requests travel (default `interrupt`)'
  })),
  resume: Type.Optional(Type.Array(AgUiResumeEntry, {
    minItems: 1,
    maxItems: MAX_RESUME_ENTRIES,
    description: 'Answers to the interrupts (approval requests) that ended the thread\'s previous run'
  }))
}, { additionalProperties: true, title: 'AgUiRunInput' })
export type AgUiRunInput = Static<typeof AgUiRunInput>

export const AiSdkUiMessage = Type.Object({
  id: Type.String({ maxLength: 256 }),
  role: Type.Union([Type.Literal('system'), Type.Literal('user'), Type.Literal('assistant')]),
  parts: Type.Array(LooseObject, {
    maxItems: 1000,
    description: 'UI message parts; `text` parts of the last user message and `approval-responded` tool parts are read'
  })
}, { additionalProperties: true, title: 'AiSdkUiMessage' })

export const AiSdkChatRequest = Type.Object({
  id: clientId('The chat id: the Tollgate session id'),
  messages: Type.Array(AiSdkUiMessage, { minItems: 1, maxItems: MAX_ADAPTER_MESSAGES }),
  trigger: Type.Optional(Type.String({ maxLength: 64, description: '`submit-message` (other triggers are refused)' })),
  messageId: Type.Optional(Type.String({ maxLength: 256 })),
  tollgate: Type.Optional(Type.Object({
    always: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 128 }), {
      maxItems: 64,
      description: 'Approval ids whose `approved: true` response means `always` (the tool, or for shell the exact command, is ' +
        'allowed for the rest of the session); send with addToolApprovalResponse({ id, approved: true, options: { body: { tollgate: { always: [id] } } } })'
    }))
  }, { additionalProperties: false, description: 'Tollgate\'s own answers the AI SDK\'s approval protocol has no word for' })),
  client_tools: Type.Optional(ClientTools)
}, { additionalProperties: true, title: 'AiSdkChatRequest' })
export type AiSdkChatRequest = Static<typeof AiSdkChatRequest>

export const AgUiEventStream = Type.String({
  description: 'AG-UI events as server-sent events (`data: <event JSON>`), encoded by @ag-ui/encoder: RUN_STARTED, ' +
    'TEXT_MESSAGE_START/CONTENT/END, TOOL_CALL_START/ARGS/END, TOOL_CALL_RESULT, CUSTOM (approvals in `custom` mode), ' +
    'then RUN_FINISHED (outcome success, interrupt or cancelled) or RUN_ERROR'
})

export const AiSdkUiMessageStream = Type.String({
  description: 'AI SDK UI message stream (header `x-vercel-ai-ui-message-stream: v1`): `data: <chunk JSON>` lines ' +
    '(start, start-step, text-start/delta/end, tool-input-start/available, tool-approval-request, data-tollgate-approval, ' +
    'tool-output-available/error/denied, finish-step, finish, error, abort), then `data: [DONE]`'
})

/** The problem answers both adapter routes give before their stream starts (docs/wire-behaviour.md). */
export const AdapterRefusals = {
  400: Problem, 401: Problem, 403: Problem, 404: Problem, 409: Problem, 410: Problem, 413: Problem, 429: Problem
}
