/**
 * Scoped registry assembly: the one seam that decides which tools a turn may see and run.
 * Admission = agent bundle ∩ risk-profile allowed_tools (if any) ∩ per-run allow (if any),
 * plus the agent's MCP tools under the MCP access policy, minus risk-profile excluded_tools and
 * per-run exclude. The same excluded set is checked again at execution time, so a hidden tool
 * can neither be advertised nor run.
 */
import type { AgentConfig, RiskProfileConfig } from '../../../schemas/config.js'
import { TollgateError } from '../../core/errors.js'
import { createDeferredTools, type DeferredTools } from './deferred.js'
import { matchesAlwaysGroup, visibleUnderGroups } from './filter-groups.js'
import { mcpAccessPolicy, mcpAdmits, riskAdmits } from './mcp-policy.js'
import { TOOL_SEARCH_TOOL } from './tool-search.js'
import { ActivatedToolSet, TOOL_SEARCH } from './activated.js'
import { normaliseToolName, type ToolNarrowing } from './names.js'
import type { McpOffer } from './offer.js'

export type { ToolNarrowing } from './names.js'
export type { McpOffer } from './offer.js'
import type { ToolCatalog } from '../catalog.js'
import type { Tool, ToolSpec } from '../contract.js'

export { normaliseToolName }

export class ScopedRegistry {
  private readonly tools: ReadonlyMap<string, Tool>
  readonly excluded: ReadonlySet<string>
  private readonly specList: readonly ToolSpec[]

  constructor (tools: readonly Tool[], excluded: Iterable<string>) {
    this.excluded = new Set([...excluded].map(normaliseToolName))
    this.tools = new Map(tools.filter((t) => !this.isExcluded(t.name)).map((t) => [t.name, t]))
    this.specList = Object.freeze([...this.tools.values()].map((t) => t.spec))
  }

  isExcluded (name: string): boolean {
    return this.excluded.has(normaliseToolName(name))
  }

  /** Static registry lookup by exact name. */
  get (name: string): Tool | undefined {
    return this.tools.get(name)
  }

  list (): Tool[] {
    return [...this.tools.values()]
  }

  /** The same array every iteration: specs are shared, never re-cloned. */
  specs (): readonly ToolSpec[] {
    return this.specList
  }
}

export interface AssembleOptions {
  catalog: ToolCatalog
  agent: AgentConfig
  risk: RiskProfileConfig
  narrowing?: ToolNarrowing
  mcp?: McpOffer
  /** The turn's user message: dynamic filter groups match their keywords against it. */
  message?: string
}

export interface ScopedTools {
  registry: ScopedRegistry
  /** Deferred mode only (null otherwise): the turn's activation set and its stubs. */
  activated: ActivatedToolSet | null
  deferred: DeferredTools | null
}

function unknownAllowed (names: readonly string[]): TollgateError {
  return new TollgateError('UNKNOWN_TOOL', {
    detail: `not available to this agent: ${names.join(', ')}`
  })
}

/**
 * The one assembly seam. Built-ins: agent bundle ∩ risk allowed_tools ∩ per-run allow. MCP: the
 * bundled servers' wrappers under the MCP access policy (policy.ts), then, per turn, the filter
 * groups. Eager: every visible wrapper is registered. Deferred: `tool_search` plus stubs;
 * `always` groups pre-activate theirs. Every excluded name (denylists, tools a group hides) is
 * dropped from the registry AND refused at execution.
 */
function assemble (options: AssembleOptions, purpose: 'turn' | 'listing'): ScopedTools {
  const { catalog, agent, risk, narrowing, mcp } = options
  const bundle = agent.tools.flatMap((name) => {
    const tool = catalog.get(name)
    return tool === undefined ? [] : [tool]
  })
  const riskAllowed = risk.allowed_tools.length === 0 ? null : new Set(risk.allowed_tools)
  let builtins = riskAllowed === null ? bundle : bundle.filter((t) => riskAllowed.has(t.name))
  const policy = mcpAccessPolicy(risk, narrowing)
  const offered = (mcp?.tools ?? []).filter((t) => riskAdmits(policy, t.name))
  const deferredMode = purpose === 'turn' && mcp?.deferred === true

  const excluded = [...risk.excluded_tools, ...(narrowing?.exclude ?? [])]
  if (narrowing?.allow !== undefined) {
    const hidden = new Set(excluded.map(normaliseToolName))
    // Asking for a tool policy hides is a client mistake worth naming, not a silent no-op.
    const names = new Set([...builtins, ...offered].filter((t) => !hidden.has(normaliseToolName(t.name))).map((t) => t.name))
    if (deferredMode && offered.length > 0 && !hidden.has(TOOL_SEARCH)) names.add(TOOL_SEARCH)
    const unknown = narrowing.allow.filter((n) => !names.has(n))
    if (unknown.length > 0) throw unknownAllowed(unknown)
    const allow = new Set(narrowing.allow)
    builtins = builtins.filter((t) => allow.has(t.name))
  }
  const admittedMcp = offered.filter((t) => mcpAdmits(policy, t.name))
  if (purpose === 'listing' || mcp === undefined) {
    return { registry: new ScopedRegistry([...builtins, ...admittedMcp], excluded), activated: null, deferred: null }
  }

  const message = options.message ?? ''
  const visible = admittedMcp.filter((t) => visibleUnderGroups(mcp.groups, t.name, message))
  const shown = new Set(visible)
  const hidden = admittedMcp.filter((t) => !shown.has(t)).map((t) => t.name)
  if (!deferredMode || visible.length === 0) {
    return { registry: new ScopedRegistry([...builtins, ...visible], [...excluded, ...hidden]), activated: null, deferred: null }
  }

  const activated = new ActivatedToolSet()
  for (const tool of visible) if (matchesAlwaysGroup(mcp.groups, tool.name)) activated.activate(tool)
  const deferred = createDeferredTools(visible, activated)
  const registry = new ScopedRegistry([...builtins, TOOL_SEARCH_TOOL], [...excluded, ...hidden])
  return { registry, activated, deferred }
}

export function assembleScopedTools (options: AssembleOptions): ScopedTools {
  return assemble(options, 'turn')
}

/**
 * The listing view (GET /v1/tools): every admitted MCP tool as a wrapper in either loading mode,
 * no tool_search, and no filter groups (they depend on a message there is none of).
 */
export function assembleScopedRegistry (options: AssembleOptions): ScopedRegistry {
  return assemble(options, 'listing').registry
}
