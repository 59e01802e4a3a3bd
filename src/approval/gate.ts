/**
 * Approval gate for one prepared call. Approval is a pre-execution control: it decides whether a
 * call may run, it is never evidence that it ran. Every decision is audited with who decided
 * and through which channel; runtime fail-closed denials are never blamed on the user.
 */
import type { ApprovalRisk } from '../../schemas/approval.js'
import type { ApprovalDecision } from '../../schemas/events.js'
import type { Tool } from '../tools/tool.js'
import type { ResolvedAgentExecution, TurnState } from '../turn/context.js'
import { scrubValue } from '../security/redact.js'
import { displayArguments, type ArgumentDisplay } from './display.js'
import { classifyRisk } from './risk.js'
import { sanitizeReplacement, summarizeArgs } from './summary.js'

export interface ApprovalQuestion {
  callId: string
  tool: string
  /** Scrubbed, for programs. */
  arguments: Record<string, unknown>
  /** Scrubbed one-line record (the audit's `arguments_summary`). */
  summary: string
  /** The exact arguments, for the person deciding. */
  display: ArgumentDisplay[]
  risk: ApprovalRisk
  /** The policy rule that asked, in words. */
  reason: string
  timeoutMs: number
  /** Nobody who could answer is connected: wait anyway (REST, a later subscriber) or deny at once. */
  whenUnwatched: 'wait' | 'deny'
}

/** `operator`: a person answered. Anything else is the runtime failing closed. */
export type ApprovalSource = 'operator' | 'unavailable' | 'timed_out' | 'cancelled'

export interface ApprovalReply {
  decision: 'yes' | 'no' | 'always' | 'edit'
  replacement?: string
  source: ApprovalSource
  requestId: string | null
  decidedBy: string
  channel: string
  /** Principal key (`tenant/sub`) of the operator who answered; the broker always sets it for operator answers. */
  principal?: string
}

/** The audit's principal for runtime decisions; never a principal key (those always contain a `/`). */
export const RUNTIME_DECIDER = 'runtime'

/** The turn's approval backchannel (WebSocket owner/subscribers, SSE + REST). */
export interface ApprovalChannel {
  ask (question: ApprovalQuestion, signal: AbortSignal): Promise<ApprovalReply>
}

export const NO_BACKCHANNEL: ApprovalChannel = {
  async ask () {
    return { decision: 'no', source: 'unavailable', requestId: null, decidedBy: 'runtime', channel: 'runtime' }
  }
}

export const USER_DENIED_TEXT = 'Denied by user.'

export function runtimeDeniedText (tool: string): string {
  return `Tool call not executed: '${tool}' requires approval and no operator decision was available, so the runtime denied it by policy. This was not a user's decision.`
}

/** Result text of a call whose approval wait ended because the turn was cancelled (worded like dispatch's NOT_RUN_TEXT). */
export const CANCELLED_WAITING_TEXT = '[not executed: the turn was cancelled while this call waited for approval]'

export type GateOutcome =
  | { kind: 'proceed', approved: boolean }
  | { kind: 'deny', text: string }
  | { kind: 'replace', text: string }
  | { kind: 'cancel', text: string }

function auditDecision (reply: ApprovalReply): ApprovalDecision {
  if (reply.source === 'unavailable') return 'auto-deny'
  if (reply.source === 'timed_out') return 'expired'
  if (reply.source === 'cancelled') return 'cancelled'
  return reply.decision
}

export async function gateToolApproval (
  exec: ResolvedAgentExecution,
  state: TurnState,
  call: { callId: string, name: string, arguments: Record<string, unknown> },
  tool: Tool
): Promise<GateOutcome> {
  const requirement = exec.approval.requirement(call.name, call.arguments)
  if (requirement !== 'prompt') return { kind: 'proceed', approved: requirement === 'approved' }

  // The audit's record is made from scrubbed arguments; the person deciding sees them exactly.
  const summary = summarizeArgs(scrubValue(call.arguments))
  const reply = state.interactive
    ? await state.approvals.ask({
      callId: call.callId,
      tool: call.name,
      arguments: scrubValue(call.arguments) as Record<string, unknown>,
      summary,
      display: displayArguments(call.arguments),
      risk: classifyRisk(tool, call.arguments),
      reason: exec.approval.promptReason(call.name),
      timeoutMs: exec.knobs.approvalTimeoutMs,
      whenUnwatched: exec.knobs.onNoBackchannel
    }, state.signal)
    : await NO_BACKCHANNEL.ask({
      callId: call.callId, tool: call.name, arguments: {}, summary, display: [], risk: 'medium', reason: '', timeoutMs: 0,
      whenUnwatched: 'deny'
    }, state.signal)

  const decision = auditDecision(reply)
  const principal = reply.principal ?? RUNTIME_DECIDER
  if (reply.requestId !== null) {
    state.emit({ kind: 'approval.resolved', request_id: reply.requestId, call_id: call.callId, decision, decided_by: reply.decidedBy })
  }
  const entry = {
    request_id: reply.requestId ?? `auto-${call.callId}`,
    call_id: call.callId,
    tool: call.name,
    arguments_summary: summary,
    decision,
    decided_by: reply.decidedBy,
    channel: reply.channel,
    principal,
    timestamp: new Date().toISOString()
  }
  state.recordApproval(entry)
  exec.observer.record({
    kind: 'approval',
    tool: call.name,
    call_id: call.callId,
    request_id: reply.requestId,
    decision,
    decided_by: reply.decidedBy,
    approval_channel: reply.channel,
    principal,
    turn_id: state.turnId,
    session_id: state.sessionId,
    agent: exec.agent,
    channel: exec.channel
  })

  // A cancellation is nobody's denial: the call reports `cancelled`, like the batch's unstarted calls.
  if (reply.source === 'cancelled') return { kind: 'cancel', text: CANCELLED_WAITING_TEXT }
  if (reply.source !== 'operator') return { kind: 'deny', text: runtimeDeniedText(call.name) }
  switch (reply.decision) {
    case 'no':
      return { kind: 'deny', text: USER_DENIED_TEXT }
    case 'edit':
      return { kind: 'replace', text: sanitizeReplacement(reply.replacement ?? '') }
    case 'always':
      exec.approval.grantAlways(call.name, call.arguments)
      return { kind: 'proceed', approved: true }
    case 'yes':
      return { kind: 'proceed', approved: true }
  }
}
