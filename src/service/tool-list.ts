/**
 * The effective tool list of an agent, as GET /v1/tools reports it: the same scoped registry a
 * turn of that agent starts with (before per-run narrowing), and each tool's approval requirement
 * under the agent's risk profile with no session grants.
 */
import type { ToolList } from '../../schemas/tools.js'
import { SessionGrants } from '../approval/grants.js'
import { ApprovalManager } from '../approval/policy.js'
import type { Config } from '../core/config.js'
import type { ToolCatalog } from '../tools/catalog.js'
import type { McpToolSource } from '../tools/contract.js'
import { mcpOffer } from '../tools/scope/offer.js'
import { assembleScopedRegistry } from '../tools/scope/scoped.js'
import { resolveAgent } from './agent-resolution.js'

export function effectiveTools (config: Config, catalog: ToolCatalog, mcp: McpToolSource | undefined, name: string): ToolList {
  const { agent, runtime, risk } = resolveAgent(config, name)
  const offer = mcpOffer(config, agent, runtime, mcp)
  const registry = assembleScopedRegistry({ catalog, agent, risk, ...(offer === undefined ? {} : { mcp: offer }) })
  const approval = new ApprovalManager(risk, new SessionGrants())
  return {
    agent: name,
    tools: registry.list().map((t) => ({
      name: t.name,
      description: t.description,
      parameters: t.parameters,
      provenance: t.attribution.provenance,
      source: t.attribution.source,
      approval: approval.requirement(t.name)
    }))
  }
}
