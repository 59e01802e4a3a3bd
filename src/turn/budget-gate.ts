/**
 * Before a model call: its worst case reserved against the turn's budgets. A call that would pass
 * one is not made; with `on_exceeded = "ask"` a person is asked first, through the turn's approval
 * backchannel like any tool approval (an approval of kind `budget`: listed, answered over
 * WebSocket or REST, expiring, audited). Yes raises that budget for this turn by its own size.
 */
import { TurnFailure } from '../core/errors.js'
import { NO_BACKCHANNEL, RUNTIME_DECIDER, type ApprovalReply } from '../approval/decision.js'
import type { ApprovalDecision } from '../../schemas/events.js'
import type { ResolvedAgentExecution, TurnState } from './context.js'
import { overrunText, type BudgetOverrun, type CallSpending, type SpendReservation } from './spending.js'

/** The pseudo-tool name a budget approval carries (its audit entry, `tool` of the pending request). */
export const BUDGET_TOOL = 'budget'

function decisionOf (reply: ApprovalReply): ApprovalDecision {
  if (reply.source === 'unavailable') return 'auto-deny'
  if (reply.source === 'timed_out') return 'expired'
  if (reply.source === 'cancelled') return 'cancelled'
  return reply.decision
}

function usd (n: number): string {
  return `${n} USD`
}

async function askToRaise (exec: ResolvedAgentExecution, state: TurnState, overrun: BudgetOverrun, n: number): Promise<boolean> {
  // Unique within the turn: one per overrun.
  const callId = `budget_${state.iteration}_${n}`
  const summary = overrunText(overrun)
  const question = {
    callId,
    tool: BUDGET_TOOL,
    arguments: { ...overrun },
    summary,
    display: [
      { name: 'budget', value: overrun.budget },
      { name: 'spent', value: usd(overrun.spent_usd) },
      { name: 'limit', value: usd(overrun.limit_usd) },
      { name: 'next call', value: usd(overrun.call_usd) }
    ],
    risk: 'medium' as const,
    reason: `the next model call would pass the ${overrun.budget} budget; yes raises it for this turn by its configured size`,
    timeoutMs: exec.knobs.approvalTimeoutMs,
    whenUnwatched: exec.knobs.onNoBackchannel,
    approvalKind: 'budget' as const
  }
  const reply = state.interactive ? await state.approvals.ask(question, state.signal) : await NO_BACKCHANNEL.ask(question, state.signal)
  const decision = decisionOf(reply)
  if (reply.requestId !== null) {
    state.emit({ kind: 'approval.resolved', request_id: reply.requestId, call_id: callId, decision, decided_by: reply.decidedBy })
  }
  state.recordApproval({
    request_id: reply.requestId ?? `auto-${callId}`,
    call_id: callId,
    tool: BUDGET_TOOL,
    arguments_summary: summary,
    decision,
    decided_by: reply.decidedBy,
    channel: reply.channel,
    principal: reply.principal ?? RUNTIME_DECIDER,
    timestamp: new Date().toISOString()
  })
  return reply.source === 'operator' && (reply.decision === 'yes' || reply.decision === 'always')
}

/** The call's reservation; throws `BUDGET_EXCEEDED` when a budget stands in the way and nobody raised it. */
export async function reserveCall (
  exec: ResolvedAgentExecution, state: TurnState, spending: CallSpending, worstCaseUsd: number
): Promise<SpendReservation> {
  for (let n = 1; ; n++) {
    const reserved = await spending.reserve(worstCaseUsd)
    if ('settle' in reserved) return reserved
    state.log.warn({ ...reserved }, 'a model call would pass a budget')
    if (spending.onExceeded === 'fail' || !await askToRaise(exec, state, reserved, n)) {
      throw new TurnFailure('BUDGET_EXCEEDED', overrunText(reserved))
    }
    spending.raise(reserved.budget)
  }
}
