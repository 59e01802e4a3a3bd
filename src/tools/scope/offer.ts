/** What MCP offers one agent: its bundled servers' current wrappers, in the configured loading mode. */
import type { AgentConfig, Config, RuntimeProfileConfig } from '../../../schemas/config.js'
import type { McpOffer } from './scoped.js'
import type { McpToolSource } from '../../mcp/manager.js'

export function mcpOffer (config: Config, agent: AgentConfig, runtime: RuntimeProfileConfig, source: McpToolSource | undefined): McpOffer | undefined {
  if (source === undefined || !config.mcp.enabled || agent.mcp_bundles.length === 0) return undefined
  return { tools: source.tools(agent.mcp_bundles), deferred: config.mcp.deferred_loading, groups: runtime.tool_filter_groups }
}
