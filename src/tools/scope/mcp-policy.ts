/**
 * MCP access policy: which MCP-origin tools an agent's turn may have at all. Deny wins; a
 * non-empty risk `allowed_tools` admits the names it lists AND every `server__tool` name (an
 * allow-list written for built-ins must not silently drop the agent's bundled servers); the
 * per-run allow of one request is a strict intersection with no such auto-admit.
 */
import type { RiskProfileConfig } from '../../../schemas/config.js'
import { normaliseToolName, type ToolNarrowing } from './names.js'

export interface McpAccessPolicy {
  denied: ReadonlySet<string>
  riskAllowed: ReadonlySet<string> | null
  callerAllowed: ReadonlySet<string> | null
}

export function mcpAccessPolicy (risk: RiskProfileConfig, narrowing?: ToolNarrowing): McpAccessPolicy {
  return {
    denied: new Set([...risk.excluded_tools, ...(narrowing?.exclude ?? [])].map(normaliseToolName)),
    riskAllowed: risk.allowed_tools.length === 0 ? null : new Set(risk.allowed_tools),
    callerAllowed: narrowing?.allow === undefined ? null : new Set(narrowing.allow)
  }
}

/** The risk-profile part alone: what the agent has before one request narrows it. */
export function riskAdmits (policy: McpAccessPolicy, name: string): boolean {
  return policy.riskAllowed === null || policy.riskAllowed.has(name) || name.includes('__')
}

export function mcpAdmits (policy: McpAccessPolicy, name: string): boolean {
  if (policy.denied.has(normaliseToolName(name))) return false
  if (!riskAdmits(policy, name)) return false
  return policy.callerAllowed === null || policy.callerAllowed.has(name)
}
