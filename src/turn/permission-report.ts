/**
 * What the approval gate says about a permission rules' decision: the observer record (log line
 * and the metric by rule and outcome, in shadow mode too), and the texts the model reads when a
 * rule denied its call or a call the rules left to a person found nobody to answer.
 */
import type { GateVerdict } from '../approval/policy.js'
import { scrubText, scrubValue } from '../core/security/redact.js'
import type { PermissionDecision } from '../approval/permissions.js'
import type { ResolvedAgentExecution, TurnState } from './context.js'

export function reportPermission (
  exec: ResolvedAgentExecution, state: TurnState, call: { callId: string, name: string }, verdict: GateVerdict
): void {
  const { permission } = verdict
  if (permission === null) return
  exec.observer.record({
    kind: 'permission',
    tool: call.name,
    call_id: call.callId,
    rule: permission.rule,
    outcome: permission.outcome,
    mode: verdict.shadow ? 'shadow' : 'enforce',
    policy_version: permission.policyVersion,
    requirement: verdict.requirement,
    // Logged and chained: commands can carry credentials.
    reason: scrubText(permission.reason),
    ...(permission.plan === undefined ? {} : { plan: scrubValue(permission.plan) }),
    turn_id: state.turnId,
    session_id: state.sessionId,
    agent: exec.agent,
    channel: exec.channel
  })
}

/** The model is told which rule denied the call, so it can try another way. */
export function ruleDeniedText (tool: string, permission: PermissionDecision | null): string {
  const rule = permission?.rule ?? 'a permission rule'
  const why = permission === null ? '' : ` (${permission.reason})`
  return `Tool call not executed: '${tool}' denied by ${rule}${why}. No person was asked; do not retry the same call.`
}

/** The runtime's fail-closed text, with why the call needed a person when permission rules asked. */
export function unansweredText (text: string, verdict: GateVerdict): string {
  const { permission } = verdict
  if (permission === null || verdict.shadow || permission.outcome === 'allow') return text
  return `${text} It needed a person's answer because ${permission.reason}.`
}
