/**
 * AI SDK adapter: reads the chat request `DefaultChatTransport` sends (AI SDK 6) into a Tollgate
 * turn start or approval answers, and translates the turn's own events into UI message stream
 * chunks. Tollgate's tools are unknown to the frontend, so they travel as dynamic tools.
 *
 * An approval request ends the stream the way the AI SDK's own server does (`tool-approval-request`,
 * then `finish`): the Tollgate turn keeps waiting, and the request that
 * `addToolApprovalResponse` triggers (the last assistant message with `approval-responded` tool
 * parts) answers it and streams the rest of the same turn into the same assistant message.
 */
import type { AiSdkChatRequest } from '../../schemas/adapters.js'
import { MAX_DENIAL_REASON_CHARS, MAX_REPLACEMENT_CHARS } from '../../schemas/approval.js'
import type { TurnRequest } from '../../schemas/turn.js'
import type { BusEnvelope } from '../bus/bus.js'
import { TollgateError } from '../core/errors.js'
import { approvalRequest, turnMessage, type AdapterAnswer, type EventTranslator, type Translation } from './stream.js'

export const UI_MESSAGE_STREAM_HEADERS = { 'x-vercel-ai-ui-message-stream': 'v1' } as const

export type AiSdkPlan =
  | { kind: 'start', request: TurnRequest }
  | { kind: 'resume', answers: AdapterAnswer[] }
  /** Outputs `addToolOutput` put in the last assistant message (only those of waiting client tool calls are delivered). */
  | { kind: 'results', results: Array<{ callId: string, output: string }> }

interface ApprovalResponsePart {
  state?: unknown
  output?: unknown
  approval?: { id?: unknown, approved?: unknown, reason?: unknown }
}

function isRequestId (id: unknown): id is string {
  return typeof id === 'string' && id.length > 0 && id.length <= 128
}

/**
 * The answers the last assistant message carries. `addToolApprovalResponse` gives yes or no (with
 * the person's optional reason, which the model reads) and, with the request's id in
 * `tollgate.always`, always. `addToolOutput` on a call still waiting for its approval supplies the
 * call's result instead of running it: Tollgate's edit.
 */
function approvalAnswers (parts: readonly unknown[], always: ReadonlySet<string>): AdapterAnswer[] {
  const answers: AdapterAnswer[] = []
  for (const part of parts as readonly ApprovalResponsePart[]) {
    const { id, approved, reason } = part.approval ?? {}
    if (part.state === 'approval-responded') {
      if (!isRequestId(id) || typeof approved !== 'boolean') {
        throw new TollgateError('INVALID_DECISION', 'an approval-responded part needs approval.id (string) and approval.approved (boolean)')
      }
      if (approved) {
        answers.push({ requestId: id, decision: always.has(id) ? 'always' : 'yes' })
        continue
      }
      if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_DENIAL_REASON_CHARS)) {
        throw new TollgateError('INVALID_DECISION', `approval.reason must be a string of at most ${MAX_DENIAL_REASON_CHARS} characters`)
      }
      answers.push({ requestId: id, decision: 'no', ...(typeof reason === 'string' && reason.trim() !== '' ? { reason } : {}) })
    } else if (part.state === 'output-available' && isRequestId(id) && approved === undefined) {
      const replacement = typeof part.output === 'string' ? part.output : JSON.stringify(part.output ?? null)
      if (replacement.length > MAX_REPLACEMENT_CHARS) {
        throw new TollgateError('INVALID_DECISION', `a tool output given in place of an approval must be at most ${MAX_REPLACEMENT_CHARS} characters`)
      }
      answers.push({ requestId: id, decision: 'edit', replacement })
    }
  }
  return answers
}

/** The tool outputs of the last assistant message (`addToolOutput`), as text. */
function toolOutputs (parts: readonly unknown[]): Array<{ callId: string, output: string }> {
  const results: Array<{ callId: string, output: string }> = []
  for (const part of parts as ReadonlyArray<{ state?: unknown, toolCallId?: unknown, output?: unknown }>) {
    if (part.state !== 'output-available' || typeof part.toolCallId !== 'string') continue
    const output = typeof part.output === 'string' ? part.output : JSON.stringify(part.output ?? null)
    if (output.length > MAX_REPLACEMENT_CHARS) throw new TollgateError('INVALID_REQUEST', `a tool output is at most ${MAX_REPLACEMENT_CHARS} characters`)
    results.push({ callId: part.toolCallId, output })
  }
  return results
}

/** What a chat request asks for; every refusal is a typed error thrown before anything is created. */
export function planChat (body: AiSdkChatRequest): AiSdkPlan {
  if (body.trigger !== undefined && body.trigger !== 'submit-message') {
    throw new TollgateError('INVALID_REQUEST', `trigger ${body.trigger} is not supported: Tollgate keeps the session history; send a new message`)
  }
  const last = body.messages.at(-1)
  if (last?.role === 'assistant') {
    const answers = approvalAnswers(last.parts, new Set(body.tollgate?.always ?? []))
    if (answers.length > 0) return { kind: 'resume', answers }
    const results = toolOutputs(last.parts)
    if (results.length === 0) throw new TollgateError('INVALID_REQUEST', 'the last message must be a user message or carry tool approval responses or tool outputs')
    return { kind: 'results', results }
  }
  if (last?.role !== 'user') throw new TollgateError('INVALID_REQUEST', 'the last message must be a user message')
  const text = (last.parts as ReadonlyArray<{ type?: unknown, text?: unknown }>)
    .filter((p) => p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('\n')
  const clientTools = body.client_tools ?? []
  return { kind: 'start', request: { session_id: body.id, message: turnMessage(text), ...(clientTools.length === 0 ? {} : { client_tools: clientTools }) } }
}

type Chunk = Record<string, unknown> & { type: string }

/** One response's worth of UI message chunks from a Tollgate turn. */
export class AiSdkTranslator implements EventTranslator {
  private readonly announced: Set<string>
  private textId: string | null = null
  private reasoningId: string | null = null
  private stepHasContent = false
  private turnId = ''

  constructor (announcedCalls: readonly string[] = []) {
    this.announced = new Set(announcedCalls)
  }

  private static frame (chunk: Chunk): string {
    return `data: ${JSON.stringify(chunk)}\n\n`
  }

  /** The assistant message is the turn: a resumed stream continues the same message. */
  opening (turnId: string): string[] {
    this.turnId = turnId
    return [AiSdkTranslator.frame({ type: 'start', messageId: turnId }), AiSdkTranslator.frame({ type: 'start-step' })]
  }

  /** Ends the open text part, and the open reasoning part: whatever comes next starts its own. */
  private closeText (out: Chunk[]): void {
    this.closeReasoning(out)
    if (this.textId === null) return
    out.push({ type: 'text-end', id: this.textId })
    this.textId = null
  }

  private closeReasoning (out: Chunk[]): void {
    if (this.reasoningId === null) return
    out.push({ type: 'reasoning-end', id: this.reasoningId })
    this.reasoningId = null
  }

  private announce (out: Chunk[], callId: string, name: string, args: Record<string, unknown>): void {
    if (this.announced.has(callId)) return
    this.announced.add(callId)
    out.push({ type: 'tool-input-start', toolCallId: callId, toolName: name, dynamic: true })
    out.push({ type: 'tool-input-available', toolCallId: callId, toolName: name, input: args, dynamic: true })
  }

  private finish (out: Chunk[], finishReason: string): string[] {
    this.closeText(out)
    out.push({ type: 'finish-step' }, { type: 'finish', finishReason })
    return [...out.map((c) => AiSdkTranslator.frame(c)), 'data: [DONE]\n\n']
  }

  translate (envelope: BusEnvelope): Translation {
    const e = envelope.event
    const out: Chunk[] = []
    switch (e.kind) {
      // A steering message (user.message): the model reads it at its next call, a step of its own.
      case 'turn.started':
      case 'approval.resolved':
      case 'user.message':
        break
      // After a restart the model call that was streaming is made again: a new step.
      case 'iteration':
      case 'turn.resumed':
        if (this.stepHasContent) {
          this.closeText(out)
          out.push({ type: 'finish-step' }, { type: 'start-step' })
          this.stepHasContent = false
        }
        break
      case 'reasoning.delta':
        if (e.text === '') break
        if (this.reasoningId === null) {
          this.closeText(out)
          this.reasoningId = `${this.turnId}-th${envelope.seq}`
          out.push({ type: 'reasoning-start', id: this.reasoningId })
        }
        out.push({ type: 'reasoning-delta', id: this.reasoningId, delta: e.text })
        this.stepHasContent = true
        break
      case 'model.fallback':
        out.push({ type: 'data-tollgate-fallback', id: `${this.turnId}-f${envelope.seq}`, data: { from: e.from, to: e.to, code: e.code, reason: e.reason } })
        break
      case 'text.delta':
        if (e.text === '') break
        this.closeReasoning(out)
        if (this.textId === null) {
          this.textId = `${this.turnId}-t${envelope.seq}`
          out.push({ type: 'text-start', id: this.textId })
        }
        out.push({ type: 'text-delta', id: this.textId, delta: e.text })
        this.stepHasContent = true
        break
      case 'approval.requested':
        this.closeText(out)
        this.announce(out, e.call_id, e.name, e.arguments)
        // A client tool's call: the client runs it (onToolCall) and sends its output (addToolOutput).
        if (e.client_tool === true) return { frames: this.finish(out, 'tool-calls'), park: true }
        out.push({ type: 'tool-approval-request', approvalId: e.request_id, toolCallId: e.call_id })
        // What the person deciding reads (exact arguments), beside the AI SDK's own approval part.
        out.push({
          type: 'data-tollgate-approval',
          id: e.request_id,
          data: approvalRequest(e)
        })
        return { frames: this.finish(out, 'tool-calls'), park: true }
      case 'tool_call':
        this.closeText(out)
        this.announce(out, e.call_id, e.name, e.arguments)
        this.stepHasContent = true
        break
      case 'tool_result':
        this.closeText(out)
        // Calls that never ran (denied by policy, deduplicated) have no tool_call event before their result.
        this.announce(out, e.call_id, e.name, {})
        if (e.status === 'denied') out.push({ type: 'tool-output-denied', toolCallId: e.call_id })
        else if (e.success) out.push({ type: 'tool-output-available', toolCallId: e.call_id, output: e.output, dynamic: true })
        else out.push({ type: 'tool-output-error', toolCallId: e.call_id, errorText: e.error ?? e.output, dynamic: true })
        this.stepHasContent = true
        break
      case 'turn.completed':
        return { frames: this.finish(out, 'stop') }
      case 'turn.cancelled':
        this.closeText(out)
        out.push({ type: 'abort', reason: e.reason })
        return { frames: [...out.map((c) => AiSdkTranslator.frame(c)), 'data: [DONE]\n\n'] }
      case 'turn.failed':
        return { frames: this.failure(e.code, e.message) }
      // The UI message stream has no progress part for a running tool call.
      case 'tool.progress':
        break
      default: {
        // A new event kind fails to compile here until it is mapped (or deliberately dropped).
        const unmapped: never = e
        return unmapped
      }
    }
    return { frames: out.map((c) => AiSdkTranslator.frame(c)) }
  }

  failure (code: string, message: string): string[] {
    const out: Chunk[] = []
    this.closeText(out)
    out.push({ type: 'error', errorText: `${code}: ${message}` })
    return [...out.map((c) => AiSdkTranslator.frame(c)), 'data: [DONE]\n\n']
  }
}
