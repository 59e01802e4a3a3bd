/**
 * Who may use an agent (`agents.<name>.access`): every way a turn starts (POST /v1/turns, WS
 * `turn.start`, AG-UI, AI SDK — all through admission.ts) and GET /v1/tools ask here. Absent,
 * the agent is open to every principal, as before access existed. Given, every condition it
 * lists must hold: the caller's tenant is one of `tenants`, and the caller carries at least one
 * of `scopes`.
 */
import type { Logger } from 'pino'
import type { AgentConfig } from '../../schemas/config.js'
import type { Principal } from '../auth/principal.js'
import type { Config } from '../core/config.js'
import { TollgateError } from '../core/errors.js'
import type { ToolCatalog } from '../tools/catalog.js'
import type { McpToolSource } from '../tools/contract.js'
import { resolveAgent } from './agent-resolution.js'
import { effectiveTools } from './tool-list.js'

/** Tools that act on a tenant's machine-side state: auto-approving them for every tenant deserves a word. */
const POWERFUL_TOOLS: ReadonlySet<string> = new Set(['shell', 'file_write'])

export function mayUseAgent (agent: AgentConfig, principal: Principal): boolean {
  const { access } = agent
  if (access === undefined) return true
  if (access.tenants !== undefined && !access.tenants.includes(principal.tenant)) return false
  if (access.scopes !== undefined && !access.scopes.some((scope) => principal.scopes.has(scope))) return false
  return true
}

/** UNKNOWN_AGENT for a name not configured, AGENT_FORBIDDEN for an agent outside the principal's reach. */
export function requireAgentAccess (config: Config, principal: Principal, name: string): void {
  const { agent } = resolveAgent(config, name)
  if (!mayUseAgent(agent, principal)) throw new TollgateError('AGENT_FORBIDDEN', `this principal may not use agent ${JSON.stringify(name)}`)
}

/**
 * With JWT auth, one warning per agent that runs `shell` or `file_write` without asking anyone
 * (its risk profile's `level = "full"`, or `auto_approve` naming them or `*`) and whose
 * `access.tenants` does not narrow it: every tenant's principals may then make it act unasked.
 * Judged on what a turn of the agent would be offered (GET /v1/tools' view).
 */
export function warnOpenAutoApprovingAgents (config: Config, catalog: ToolCatalog, mcp: McpToolSource | undefined, log: Logger): void {
  if (config.auth.mode !== 'jwt') return
  for (const [name, agent] of Object.entries(config.agents)) {
    if (agent.access?.tenants !== undefined) continue
    const unasked = effectiveTools(config, catalog, mcp, name).tools
      .filter((t) => POWERFUL_TOOLS.has(t.name) && t.approval === 'approved')
      .map((t) => t.name)
    if (unasked.length === 0) continue
    log.warn({ agent: name, risk_profile: agent.risk_profile, tools: unasked },
      `agent ${JSON.stringify(name)} runs ${unasked.join(' and ')} without approval and is open to every tenant: ` +
      `set agents.${name}.access.tenants to the tenants that may use it`)
  }
}
