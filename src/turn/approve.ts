/**
 * Approval gate for one prepared call. Approval is a pre-execution control: it decides whether a
 * call may run, it is never evidence that it ran. Every decision is audited with who decided
 * and through which channel; runtime fail-closed denials are never blamed on the user.
 */
import type { ApprovalDecision } from '../../schemas/events.js'
import type { ResolvedAgentExecution, TurnState } from './context.js'
import { scrubValue } from '../core/security/redact.js'
import { displayArguments } from '../approval/display.js'
import { sanitizeReplacement, summarizeArgs } from '../approval/summary.js'
import { NO_BACKCHANNEL, RUNTIME_DECIDER, USER_DENIED_TEXT, runtimeDeniedText, type ApprovalReply } from '../approval/decision.js'

export type GateOutcome =
  | { kind: 'proceed', approved: boolean }
  | { kind: 'deny', text: string }
  | { kind: 'replace', text: string }

function auditDecision (reply: ApprovalReply): ApprovalDecision {
  if (reply.source === 'unavailable') return 'auto-deny'
  if (reply.source === 'timed_out') return 'expired'
  if (reply.source === 'cancelled') return 'cancelled'
  return reply.decision
}

export async function gateToolApproval (
  exec: ResolvedAgentExecution,
  state: TurnState,
  call: { callId: string, name: string, arguments: Record<string, unknown> }
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
      timeoutMs: exec.knobs.approvalTimeoutMs
    }, state.signal)
    : await NO_BACKCHANNEL.ask({ callId: call.callId, tool: call.name, arguments: {}, summary, display: [], timeoutMs: 0 }, state.signal)

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
