/** What MCP offers one agent: its bundled servers' current wrappers, in the configured loading mode. */
import type { AgentConfig, Config, RuntimeProfileConfig, ToolFilterGroup } from '../../../schemas/config.js'
import type { McpToolSource, Tool } from '../contract.js'

export interface McpOffer {
  /** Wrappers of the servers in the agent's `mcp_bundles`, before any policy. */
  tools: readonly Tool[]
  deferred: boolean
  groups: readonly ToolFilterGroup[]
}

export function mcpOffer (
  config: Config, agent: AgentConfig, runtime: RuntimeProfileConfig, source: McpToolSource | undefined
): McpOffer | undefined {
  if (source === undefined || !config.mcp.enabled || agent.mcp_bundles.length === 0) return undefined
  return { tools: source.tools(agent.mcp_bundles), deferred: config.mcp.deferred_loading, groups: runtime.tool_filter_groups }
}
