/**
 * AG-UI adapter: reads a `RunAgentInput` into a Tollgate turn start or approval answers, and
 * translates the turn's own events into AG-UI 1.0 events. No second engine: everything a run does
 * is a Tollgate turn, visible on every other front door too.
 *
 * Approvals travel as AG-UI 1.0 interrupts by default: the run ends with RUN_FINISHED
 * `outcome: interrupt` (one interrupt per approval request, id = request_id) while the Tollgate
 * turn keeps waiting; the next run of the thread answers with `resume`. With
 * `forwardedProps.tollgate.approvals = "custom"` the run stays open instead and a CUSTOM event
 * `tollgate.approval.requested` carries the request, answered over REST or the WebSocket.
 */
import { EventType, PROTOCOL_VERSION, type BaseEvent, type Interrupt } from '@ag-ui/core'
import { EventEncoder } from '@ag-ui/encoder'
import type { AgUiResumeEntry, AgUiRunInput } from '../../schemas/adapters.js'
import { MAX_DENIAL_REASON_CHARS, MAX_REPLACEMENT_CHARS } from '../../schemas/approval.js'
import type { TurnRequest } from '../../schemas/turn.js'
import type { ClientToolDeclaration } from '../../schemas/client-tools.js'
import type { BusEnvelope } from '../bus/bus.js'
import { TollgateError } from '../core/errors.js'
import { approvalRequest, turnMessage, type AdapterAnswer, type EventTranslator, type Translation } from './stream.js'

export type AgUiApprovalMode = 'interrupt' | 'custom'

export type AgUiPlan =
  | { kind: 'start', mode: AgUiApprovalMode, request: TurnRequest }
  | { kind: 'resume', mode: AgUiApprovalMode, answers: AdapterAnswer[] }
  /** Tool messages with the results of the frontend tools that ended the previous run. */
  | { kind: 'results', mode: AgUiApprovalMode, results: Array<{ callId: string, output: string }> }

/** The answer schema every approval interrupt names, so a generic AG-UI frontend can build its form. */
export const APPROVAL_RESPONSE_SCHEMA = {
  type: 'object',
  properties: {
    decision: { type: 'string', enum: ['yes', 'no', 'always', 'edit'] },
    replacement: { type: 'string', description: 'The tool result to use instead of running it (decision "edit")' }
  },
  required: ['decision']
} as const

function approvalMode (forwardedProps: unknown): AgUiApprovalMode {
  const tollgate = typeof forwardedProps === 'object' && forwardedProps !== null ? (forwardedProps as Record<string, unknown>).tollgate : undefined
  if (tollgate === undefined) return 'interrupt'
  const approvals = typeof tollgate === 'object' && tollgate !== null ? (tollgate as Record<string, unknown>).approvals : undefined
  if (approvals === undefined || approvals === 'interrupt') return 'interrupt'
  if (approvals === 'custom') return 'custom'
  throw new TollgateError('INVALID_REQUEST', 'forwardedProps.tollgate.approvals must be "interrupt" or "custom"')
}

/** A user message's text: a string, or the `text` parts of a content array. */
export function userText (content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) throw new TollgateError('INVALID_REQUEST', 'the last user message has no text content')
  const texts: string[] = []
  for (const part of content) {
    if (typeof part !== 'object' || part === null) continue
    const { type, text } = part as { type?: unknown, text?: unknown }
    if (type === 'text' && typeof text === 'string') texts.push(text)
  }
  return texts.join('\n')
}

/** A denial's optional `reason` (the person's words, which the model reads). */
function denialReason (entry: AgUiResumeEntry, reason: unknown): { reason?: string } {
  if (reason === undefined) return {}
  if (typeof reason !== 'string' || reason.length > MAX_DENIAL_REASON_CHARS) {
    throw new TollgateError('INVALID_DECISION', `resume entry ${entry.interruptId}: reason must be a string of at most ${MAX_DENIAL_REASON_CHARS} characters`)
  }
  return reason.trim() === '' ? {} : { reason }
}

function resumeAnswer (entry: AgUiResumeEntry): AdapterAnswer {
  if (entry.status === 'cancelled') return { requestId: entry.interruptId, decision: 'no' }
  const payload = typeof entry.payload === 'object' && entry.payload !== null ? entry.payload as Record<string, unknown> : {}
  if (typeof payload.approved === 'boolean' && payload.decision === undefined) {
    return payload.approved
      ? { requestId: entry.interruptId, decision: 'yes' }
      : { requestId: entry.interruptId, decision: 'no', ...denialReason(entry, payload.reason) }
  }
  const { decision, replacement } = payload
  if (decision !== 'yes' && decision !== 'no' && decision !== 'always' && decision !== 'edit') {
    throw new TollgateError('INVALID_DECISION', `resume entry ${entry.interruptId}: payload must be {decision: "yes"|"no"|"always"|"edit"} or {approved: boolean}`)
  }
  if (replacement !== undefined && (typeof replacement !== 'string' || replacement.length > MAX_REPLACEMENT_CHARS)) {
    throw new TollgateError('INVALID_DECISION', `resume entry ${entry.interruptId}: replacement must be a string of at most ${MAX_REPLACEMENT_CHARS} characters`)
  }
  return {
    requestId: entry.interruptId,
    decision,
    ...(replacement === undefined ? {} : { replacement }),
    ...(decision === 'no' ? denialReason(entry, payload.reason) : {})
  }
}

/** What a run asks for; every refusal is a typed error thrown before anything is created. */
/** AG-UI frontend tools (`{name, description, parameters}`) as the turn's client tools. */
function frontendTools (tools: readonly unknown[] | undefined): ClientToolDeclaration[] {
  return (tools ?? []).map((tool, i) => {
    const t = tool as { name?: unknown, description?: unknown, parameters?: unknown }
    if (typeof t !== 'object' || t === null || typeof t.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(t.name)) {
      throw new TollgateError('INVALID_REQUEST', `tools[${i}]: a frontend tool needs a name of 1-64 of [A-Za-z0-9_-]`)
    }
    const parameters = typeof t.parameters === 'object' && t.parameters !== null ? t.parameters as Record<string, unknown> : { type: 'object', properties: {} }
    return { name: t.name, description: typeof t.description === 'string' ? t.description.slice(0, 4096) : '', parameters }
  })
}

/** The trailing tool messages: results of the frontend tool calls the previous run ended with. */
function toolResults (messages: AgUiRunInput['messages']): Array<{ callId: string, output: string }> {
  const results: Array<{ callId: string, output: string }> = []
  for (let i = messages.length - 1; i >= 0 && messages[i]?.role === 'tool'; i--) {
    const m = messages[i] as { toolCallId?: unknown, content?: unknown }
    if (typeof m.toolCallId !== 'string') throw new TollgateError('INVALID_REQUEST', 'a tool message needs its toolCallId')
    const output = typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '')
    if (output.length > MAX_REPLACEMENT_CHARS) throw new TollgateError('INVALID_REQUEST', `a tool result is at most ${MAX_REPLACEMENT_CHARS} characters`)
    results.unshift({ callId: m.toolCallId, output })
  }
  return results
}

export function planRun (input: AgUiRunInput): AgUiPlan {
  const clientTools = frontendTools(input.tools)
  const mode = approvalMode(input.forwardedProps)
  if (input.resume === undefined && input.messages.at(-1)?.role === 'tool') {
    return { kind: 'results', mode, results: toolResults(input.messages) }
  }
  if (input.resume !== undefined) {
    const ids = new Set(input.resume.map((e) => e.interruptId))
    if (ids.size !== input.resume.length) throw new TollgateError('INVALID_REQUEST', 'resume answers an interrupt more than once')
    return { kind: 'resume', mode, answers: input.resume.map(resumeAnswer) }
  }
  const last = input.messages.at(-1)
  if (last === undefined || last.role !== 'user') {
    throw new TollgateError('INVALID_REQUEST', 'the last message must be a user message (or send resume answers)')
  }
  return {
    kind: 'start',
    mode,
    request: {
      session_id: input.threadId,
      message: turnMessage(userText(last.content)),
      idempotency_key: input.runId,
      ...(clientTools.length === 0 ? {} : { client_tools: clientTools })
    }
  }
}

/** One AG-UI run's worth of events from a Tollgate turn. */
export class AgUiTranslator implements EventTranslator {
  private readonly encoder = new EventEncoder()
  private readonly announced: Set<string>
  private textId: string | null = null
  private reasoningId: string | null = null
  private turnId = ''

  constructor (
    private readonly threadId: string,
    private readonly runId: string,
    private readonly mode: AgUiApprovalMode,
    announcedCalls: readonly string[] = []
  ) {
    this.announced = new Set(announcedCalls)
  }

  private frame (event: BaseEvent): string {
    return this.encoder.encodeSSE(event)
  }

  opening (turnId: string): string[] {
    this.turnId = turnId
    return [this.frame({
      type: EventType.RUN_STARTED,
      threadId: this.threadId,
      runId: this.runId,
      protocolVersion: PROTOCOL_VERSION,
      metadata: { tollgate: { turn_id: turnId, session_id: this.threadId } }
    } as BaseEvent)]
  }

  /** Ends the open text message, and the open reasoning message: whatever comes next starts its own. */
  private closeText (out: string[]): void {
    this.closeReasoning(out)
    if (this.textId === null) return
    out.push(this.frame({ type: EventType.TEXT_MESSAGE_END, messageId: this.textId } as BaseEvent))
    this.textId = null
  }

  private closeReasoning (out: string[]): void {
    if (this.reasoningId === null) return
    out.push(this.frame({ type: EventType.REASONING_MESSAGE_END, messageId: this.reasoningId } as BaseEvent))
    out.push(this.frame({ type: EventType.REASONING_END, messageId: this.reasoningId } as BaseEvent))
    this.reasoningId = null
  }

  /** TOOL_CALL_START/ARGS/END once per call: at its approval request, or when it runs. */
  private announce (out: string[], callId: string, name: string, args: Record<string, unknown> | null): void {
    if (this.announced.has(callId)) return
    this.announced.add(callId)
    out.push(this.frame({ type: EventType.TOOL_CALL_START, toolCallId: callId, toolCallName: name } as BaseEvent))
    if (args !== null) {
      out.push(this.frame({ type: EventType.TOOL_CALL_ARGS, toolCallId: callId, delta: JSON.stringify(args) } as BaseEvent))
    }
    out.push(this.frame({ type: EventType.TOOL_CALL_END, toolCallId: callId } as BaseEvent))
  }

  translate (envelope: BusEnvelope): Translation {
    const e = envelope.event
    const out: string[] = []
    switch (e.kind) {
      // A steering message (user.message): the model reads it at its next call, announced by the next iteration.
      case 'turn.started':
      case 'user.message':
        break
      // After a restart the model call that was streaming is made again: its text is a new message.
      case 'iteration':
      case 'turn.resumed':
        this.closeText(out)
        break
      case 'reasoning.delta':
        if (e.text === '') break
        if (this.reasoningId === null) {
          this.closeText(out)
          this.reasoningId = `${this.turnId}-th${envelope.seq}`
          out.push(this.frame({ type: EventType.REASONING_START, messageId: this.reasoningId } as BaseEvent))
          out.push(this.frame({ type: EventType.REASONING_MESSAGE_START, messageId: this.reasoningId, role: 'reasoning' } as BaseEvent))
        }
        out.push(this.frame({ type: EventType.REASONING_MESSAGE_CONTENT, messageId: this.reasoningId, delta: e.text } as BaseEvent))
        break
      case 'text.delta':
        if (e.text === '') break
        this.closeReasoning(out)
        if (this.textId === null) {
          this.textId = `${this.turnId}-m${envelope.seq}`
          out.push(this.frame({ type: EventType.TEXT_MESSAGE_START, messageId: this.textId, role: 'assistant' } as BaseEvent))
        }
        out.push(this.frame({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: this.textId, delta: e.text } as BaseEvent))
        break
      case 'approval.requested': {
        this.closeText(out)
        this.announce(out, e.call_id, e.name, e.arguments)
        // A frontend tool's call: the run ends, the client runs the tool and sends a tool message.
        if (e.client_tool === true) {
          out.push(this.frame({ type: EventType.RUN_FINISHED, threadId: this.threadId, runId: this.runId, outcome: { type: 'success' } } as BaseEvent))
          return { frames: out, park: true }
        }
        const request = approvalRequest(e)
        if (this.mode === 'custom') {
          out.push(this.frame({
            type: EventType.CUSTOM,
            name: 'tollgate.approval.requested',
            value: { ...request, answer: { method: 'POST', path: `/v1/approvals/${e.request_id}` } }
          } as BaseEvent))
          break
        }
        const interrupt: Interrupt = {
          id: e.request_id,
          reason: 'tool_approval',
          message: `Allow ${e.name}? ${e.summary}`,
          toolCallId: e.call_id,
          responseSchema: APPROVAL_RESPONSE_SCHEMA,
          expiresAt: e.expires_at,
          metadata: { tollgate: request }
        }
        out.push(this.frame({
          type: EventType.RUN_FINISHED,
          threadId: this.threadId,
          runId: this.runId,
          outcome: { type: 'interrupt', interrupts: [interrupt] }
        } as BaseEvent))
        return { frames: out, park: true }
      }
      case 'model.fallback':
        out.push(this.frame({
          type: EventType.CUSTOM, name: 'tollgate.model.fallback', value: { from: e.from, to: e.to, code: e.code, reason: e.reason }
        } as BaseEvent))
        break
      case 'approval.resolved':
        out.push(this.frame({
          type: EventType.CUSTOM,
          name: 'tollgate.approval.resolved',
          value: { request_id: e.request_id, call_id: e.call_id, decision: e.decision, decided_by: e.decided_by }
        } as BaseEvent))
        break
      case 'tool_call':
        this.closeText(out)
        this.announce(out, e.call_id, e.name, e.arguments)
        break
      case 'tool_result':
        this.closeText(out)
        this.announce(out, e.call_id, e.name, null)
        out.push(this.frame({
          type: EventType.TOOL_CALL_RESULT,
          messageId: `${this.turnId}-r${envelope.seq}`,
          toolCallId: e.call_id,
          role: 'tool',
          content: e.output,
          metadata: { tollgate: { status: e.status, success: e.success, ...(e.receipt === undefined ? {} : { receipt: e.receipt }) } }
        } as BaseEvent))
        break
      case 'turn.completed':
        this.closeText(out)
        out.push(this.frame({
          type: EventType.RUN_FINISHED, threadId: this.threadId, runId: this.runId, result: e.final_text, outcome: { type: 'success' }
        } as BaseEvent))
        break
      case 'turn.cancelled':
        this.closeText(out)
        out.push(this.frame({
          type: EventType.RUN_FINISHED, threadId: this.threadId, runId: this.runId, outcome: { type: 'cancelled' }, metadata: { tollgate: { reason: e.reason } }
        } as BaseEvent))
        break
      case 'turn.failed':
        return { frames: this.failure(e.code, e.message) }
      // AG-UI has no progress event for a running tool call.
      case 'tool.progress':
        break
      default: {
        // A new event kind fails to compile here until it is mapped (or deliberately dropped).
        const unmapped: never = e
        return unmapped
      }
    }
    return { frames: out }
  }

  failure (code: string, message: string): string[] {
    const out: string[] = []
    this.closeText(out)
    out.push(this.frame({ type: EventType.RUN_ERROR, message, code } as BaseEvent))
    return out
  }
}
