/**
 * `level = "readonly"` means read-only: a call runs only when its tool classifies it as `read`
 * (`Tool.effects`; a tool that does not classify its calls is side-effecting). The check is a
 * preparation step after the schema check and before the approval gate, so a refused call never
 * reaches a person, and the refusal is the call's `denied` result.
 */
import { callEffect, type Tool } from '../tools/contract.js'
import type { ApprovalManager } from './policy.js'

export function readOnlyDeniedText (tool: string): string {
  return `Tool call not executed: this agent runs under a read-only risk profile, and this '${tool}' call could change something ` +
    '(it writes files, runs a command that is not read-only, sends an HTTP request other than GET or HEAD, or uses a tool ' +
    'not marked read-only). Only calls that just read may run here; no person was asked.'
}

/** The refusal text for a call that may not run under the manager's profile, or null when it may. */
export function readOnlyRefusal (approval: ApprovalManager, tool: Tool, args: Record<string, unknown>): string | null {
  if (!approval.readOnly || callEffect(tool, args) === 'read') return null
  return readOnlyDeniedText(tool.name)
}
