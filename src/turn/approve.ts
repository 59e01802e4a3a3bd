/**
 * Approval gate for one prepared call. Approval is a pre-execution control: it decides whether a
 * call may run, it is never evidence that it ran. Every decision is audited with who decided
 * and through which channel; runtime fail-closed denials are never blamed on the user.
 */
import type { PendingApproval } from '../../schemas/approval.js'
import type { ApprovalDecision } from '../../schemas/events.js'
import type { Tool } from '../tools/contract.js'
import { classifyRisk } from '../approval/risk.js'
import { applyToolCondition } from '../approval/conditional.js'
import { awaitClientResult } from './client-tool.js'
import type { ResolvedAgentExecution, TurnState } from './context.js'
import type { ResolvedApproval } from './cursor.js'
import { scrubText, scrubValue } from '../core/security/redact.js'
import { displayArguments } from '../approval/display.js'
import { sanitizeReplacement, summarizeArgs } from '../approval/summary.js'
import { NO_BACKCHANNEL, RUNTIME_DECIDER, runtimeDeniedText, userDeniedText, type ApprovalReply } from '../approval/decision.js'
import type { GateVerdict } from '../approval/policy.js'
import type { PermissionDecision } from '../approval/permissions.js'
import { reportPermission, ruleDeniedText, unansweredText } from './permission-report.js'

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

/** The gate of a call that waited for approval when the gateway stopped, opened again after the restart. */
export interface ReopenedGate {
  /** The request as it was listed: the same id and expiry wait again. */
  request: PendingApproval
  /** The log shows an answer given before the restart (after the last checkpoint). */
  resolved: ResolvedApproval | null
}

/** An answer the log kept: the decision is known, an edit's replacement text is not (it is never logged). */
function replyFromLog (request: PendingApproval, resolved: ResolvedApproval): ApprovalReply {
  const base = { requestId: request.request_id, decidedBy: resolved.decidedBy, channel: 'runtime' }
  if (resolved.decision === 'yes' || resolved.decision === 'always' || resolved.decision === 'no') {
    return { ...base, decision: resolved.decision, source: 'operator', principal: resolved.principal }
  }
  return { ...base, decision: 'no', source: resolved.decision === 'expired' ? 'timed_out' : resolved.decision === 'cancelled' ? 'cancelled' : 'unavailable' }
}

/** Why the person is asked: the rules' reason when they asked or left parts of a command unallowed, else the profile's. */
function askedBy (exec: ResolvedAgentExecution, tool: string, permission: PermissionDecision | null): string {
  if (permission === null || permission.outcome === 'allow' || (permission.outcome === 'default' && permission.needs.length === 0)) {
    return exec.approval.promptReason(tool)
  }
  return scrubText(`Permission rules: ${permission.reason}`)
}

/** The person's answer: asked over the turn's backchannel, or denied at once for a non-interactive turn. */
async function ask (
  exec: ResolvedAgentExecution, state: TurnState, call: { callId: string, name: string, arguments: Record<string, unknown> },
  tool: Tool, summary: string, reopen: ReopenedGate | undefined, verdict: GateVerdict, reason: string | undefined
): Promise<ApprovalReply> {
  const permission = verdict.shadow ? null : verdict.permission
  if (!state.interactive && reopen === undefined) {
    return await NO_BACKCHANNEL.ask({
      callId: call.callId, tool: call.name, arguments: {}, summary, display: [], risk: 'medium', reason: '', timeoutMs: 0,
      whenUnwatched: 'deny'
    }, state.signal)
  }
  return await state.approvals.ask({
    callId: call.callId,
    tool: call.name,
    arguments: scrubValue(call.arguments) as Record<string, unknown>,
    summary,
    display: displayArguments(call.arguments),
    risk: classifyRisk(tool, call.arguments),
    reason: reason ?? askedBy(exec, call.name, permission),
    // Commands can carry credentials: what is stored and broadcast is scrubbed; `display` shows them exactly.
    ...(permission === null ? {} : { rule: permission.rule, needs: permission.needs.map((n) => scrubText(n)) }),
    timeoutMs: exec.knobs.approvalTimeoutMs,
    whenUnwatched: exec.knobs.onNoBackchannel,
    ...(reopen === undefined ? {} : { reopen: reopen.request })
  }, state.signal)
}

/**
 * The gate of one call; a client tool's call the gate lets through then waits for the client's
 * result (turn/client-tool.ts), and one that waited for it when the gateway stopped waits again.
 */
export async function gateToolApproval (
  exec: ResolvedAgentExecution,
  state: TurnState,
  call: { callId: string, name: string, arguments: Record<string, unknown> },
  tool: Tool,
  reopen?: ReopenedGate
): Promise<GateOutcome> {
  if (reopen?.request.client_tool === true) return await awaitClientResult(exec, state, call, tool, reopen)
  const outcome = await decideApproval(exec, state, call, tool, reopen)
  if (outcome.kind !== 'proceed' || tool.runsInClient !== true) return outcome
  return await awaitClientResult(exec, state, call, tool)
}

/** Whether an operator's permission rule (not the default) decided the call, in enforce mode. */
function ruledByOperator (verdict: GateVerdict): boolean {
  return !verdict.shadow && verdict.permission !== null && verdict.permission.rule !== 'default'
}

async function decideApproval (
  exec: ResolvedAgentExecution,
  state: TurnState,
  call: { callId: string, name: string, arguments: Record<string, unknown> },
  tool: Tool,
  reopen?: ReopenedGate
): Promise<GateOutcome> {
  const verdict = exec.approval.verdict(call.name, call.arguments)
  // A reopened gate's decision was reported before the restart.
  if (reopen === undefined) reportPermission(exec, state, call, verdict)
  if (reopen === undefined && verdict.requirement === 'denied') return { kind: 'deny', text: ruleDeniedText(call.name, verdict.permission) }
  // The tool's own condition narrows the default; an operator's always_ask or permission rule wins over it.
  const condition = reopen === undefined
    ? await applyToolCondition({
      tool,
      args: call.arguments,
      ctx: {
        turnId: state.turnId, sessionId: state.sessionId, callId: call.callId, signal: state.signal,
        ...(exec.tenant === undefined ? {} : { tenant: exec.tenant })
      },
      requirement: verdict.requirement === 'denied' ? 'prompt' : verdict.requirement,
      explicit: exec.approval.asksExplicitly(call.name) || ruledByOperator(verdict)
    })
    : { requirement: 'prompt' as const }
  const { requirement } = condition
  if (requirement !== 'prompt') return { kind: 'proceed', approved: requirement === 'approved' }

  // The audit's record is made from scrubbed arguments; the person deciding sees them exactly.
  const summary = summarizeArgs(scrubValue(call.arguments))
  const reply = reopen?.resolved != null
    ? replyFromLog(reopen.request, reopen.resolved)
    : await ask(exec, state, call, tool, summary, reopen, verdict, condition.reason)

  const decision = auditDecision(reply)
  const principal = reply.principal ?? RUNTIME_DECIDER
  // An answer read back from the log was announced before the restart.
  if (reply.requestId !== null && reopen?.resolved == null) {
    state.emit({ kind: 'approval.resolved', request_id: reply.requestId, call_id: call.callId, decision, decided_by: reply.decidedBy })
  }
  const enforced = verdict.shadow ? null : verdict.permission
  const entry = {
    request_id: reply.requestId ?? `auto-${call.callId}`,
    call_id: call.callId,
    tool: call.name,
    arguments_summary: summary,
    decision,
    decided_by: reply.decidedBy,
    channel: reply.channel,
    principal,
    ...(enforced === null ? {} : { rule: enforced.rule, policy_version: enforced.policyVersion }),
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
  if (reply.source !== 'operator') return { kind: 'deny', text: unansweredText(runtimeDeniedText(call.name), verdict) }
  switch (reply.decision) {
    case 'no':
      return { kind: 'deny', text: userDeniedText(reply.reason === undefined ? undefined : sanitizeReplacement(reply.reason)) }
    case 'edit':
      return { kind: 'replace', text: sanitizeReplacement(reply.replacement ?? '') }
    case 'always':
      exec.approval.grantAlways(call.name, call.arguments, verdict.shadow ? null : verdict.permission)
      return { kind: 'proceed', approved: true }
    case 'yes':
      return { kind: 'proceed', approved: true }
  }
}
