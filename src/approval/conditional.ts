/**
 * A tool's own approval condition (`needsApproval`) applied to the risk profile's requirement.
 * The condition only settles what the profile left to the default: an operator's explicit
 * `always_ask`, `auto_approve`, `full` or `readonly` level and the session's `always` grants
 * still win, so a tool author can relax the default prompt ("ask only above 100") or keep it,
 * never overrule the operator.
 */
import type { Tool, ApprovalCheckContext } from '../tools/contract.js'
import type { ApprovalRequirement } from './policy.js'

export interface ConditionInputs {
  tool: Tool
  args: Record<string, unknown>
  ctx: ApprovalCheckContext
  /** The profile's requirement for the call. */
  requirement: ApprovalRequirement
  /** The profile asks about this tool by an explicit rule (always_ask), not by default. */
  explicit: boolean
}

export interface ConditionOutcome {
  requirement: ApprovalRequirement
  /** Why the person is asked, when the tool's condition (not the profile) asked. */
  reason?: string
}

export async function applyToolCondition (inputs: ConditionInputs): Promise<ConditionOutcome> {
  const { tool, requirement } = inputs
  if (tool.needsApproval === undefined || requirement !== 'prompt' || inputs.explicit) return { requirement }
  let asks: boolean
  try {
    asks = (await tool.needsApproval(inputs.args, inputs.ctx)) !== false
  } catch {
    // A condition that cannot answer asks: failing closed costs a question, failing open a refund.
    return { requirement: 'prompt', reason: `'${tool.name}' could not tell whether this call needs approval (its condition failed), so it is asked.` }
  }
  return asks
    ? { requirement: 'prompt', reason: `'${tool.name}' asks for approval of calls like this one (its needsApproval condition).` }
    : { requirement: 'not_required' }
}
