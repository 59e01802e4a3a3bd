/**
 * Risk level shown with an approval request, so the person deciding can weigh it. It is a label
 * for people, never an input to the decision: the policy (ApprovalManager) alone decides what is asked.
 */
import type { ApprovalRisk } from '../../schemas/approval.js'
import { classifyCommand } from '../tools/builtin/shell-policy.js'
import { callEffect, type Tool } from '../tools/contract.js'

/**
 * `shell`: the command's own classification (read-only pipelines low, high-risk patterns high,
 * anything else medium). Other tools: low when the call only reads, else medium; a tool that does
 * not say what its calls do counts as writing. A tool that declares its risk (embedded, HTTP) shows that.
 */
export function classifyRisk (tool: Tool, args: Record<string, unknown>): ApprovalRisk {
  if (tool.risk !== undefined) return tool.risk
  if (tool.name === 'shell' && typeof args.command === 'string') return classifyCommand(args.command)
  return callEffect(tool, args) === 'read' ? 'low' : 'medium'
}
