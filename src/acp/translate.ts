/**
 * Tollgate turn events as ACP `session/update`s (one translator per prompt): text deltas become
 * `agent_message_chunk`, tool calls `tool_call` (pending) then `tool_call_update` (in_progress,
 * completed or failed, with the output as content and `rawOutput`), a plan a tool reports in its
 * progress `plan`, steering messages `user_message_chunk`. Approval requests are not updates: the agent asks them with
 * `session/request_permission` (agent.ts).
 */
import type { SessionUpdate, ToolCallContent } from '@agentclientprotocol/sdk'
import type { TurnEvent } from '../../schemas/events.js'
import type { HistoryMessage } from '../../schemas/session.js'
import { toolKind, toolTitle } from './tool-kind.js'

function text (content: string): ToolCallContent {
  return { type: 'content', content: { type: 'text', text: content } }
}

export class UpdateTranslator {
  /** Calls announced with `tool_call` already (a call asked about first is announced at its question). */
  private readonly announced = new Set<string>()

  /** The `tool_call` of a call, once; also what a permission request shows. */
  announce (callId: string, name: string, args: Record<string, unknown>): SessionUpdate[] {
    if (this.announced.has(callId)) return []
    this.announced.add(callId)
    return [{
      sessionUpdate: 'tool_call', toolCallId: callId, title: toolTitle(name, args), name, kind: toolKind(name), status: 'pending', rawInput: args
    }]
  }

  updates (event: TurnEvent): SessionUpdate[] {
    switch (event.kind) {
      case 'text.delta':
        return event.text === '' ? [] : [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: event.text } }]
      case 'user.message':
        return [{ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: event.message } }]
      case 'reasoning.delta':
        return event.text === '' ? [] : [{ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: event.text } }]
      case 'tool_call':
        return [
          ...this.announce(event.call_id, event.name, event.arguments),
          { sessionUpdate: 'tool_call_update', toolCallId: event.call_id, status: 'in_progress' }
        ]
      case 'tool.progress':
        return [
          // The event's plan is the whole plan, as ACP's `plan` update is: the client replaces its copy.
          ...(event.plan === undefined ? [] : [{ sessionUpdate: 'plan' as const, entries: event.plan }]),
          ...(event.message === undefined
            ? []
            : [{ sessionUpdate: 'tool_call_update' as const, toolCallId: event.call_id, status: 'in_progress' as const, content: [text(event.message)] }])
        ]
      case 'tool_result':
        return [
          // A call that never ran (denied, deduplicated) had no tool_call event.
          ...this.announce(event.call_id, event.name, {}),
          {
            sessionUpdate: 'tool_call_update',
            toolCallId: event.call_id,
            status: event.success ? 'completed' : 'failed',
            content: [text(event.output)],
            rawOutput: { status: event.status, output: event.output, ...(event.error === undefined ? {} : { error: event.error }) }
          }
        ]
      case 'approval.requested':
        return this.announce(event.call_id, event.name, event.arguments)
      case 'turn.started':
      case 'iteration':
      case 'approval.resolved':
      case 'turn.resumed':
      case 'turn.completed':
      case 'turn.cancelled':
      case 'turn.failed':
      case 'model.fallback':
        return []
      default: {
        // A new event kind fails to compile here until ACP maps it (or deliberately drops it).
        const unmapped: never = event
        return unmapped
      }
    }
  }
}

/** A session's stored history as the updates `session/load` replays. */
export function historyUpdates (history: readonly HistoryMessage[]): SessionUpdate[] {
  const out: SessionUpdate[] = []
  for (const m of history) {
    if (m.role === 'user' && m.content !== null) out.push({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: m.content } })
    if (m.role === 'assistant') {
      if (m.content !== null && m.content !== '') out.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: m.content } })
      for (const call of m.tool_calls ?? []) {
        let args: Record<string, unknown> = {}
        try {
          const parsed: unknown = JSON.parse(call.arguments)
          if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) args = parsed as Record<string, unknown>
        } catch {}
        out.push({
          sessionUpdate: 'tool_call', toolCallId: call.id, title: toolTitle(call.name, args), name: call.name, kind: toolKind(call.name), status: 'pending', rawInput: args
        })
      }
    }
    if (m.role === 'tool' && m.tool_call_id !== undefined) {
      out.push({ sessionUpdate: 'tool_call_update', toolCallId: m.tool_call_id, status: 'completed', content: [text(m.content ?? '')], rawOutput: { output: m.content } })
    }
  }
  return out
}
