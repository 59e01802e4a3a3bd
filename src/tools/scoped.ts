/**
 * Scoped registry assembly: the one seam that decides which tools a turn may see and run.
 * Admission = agent bundle ∩ risk-profile allowed_tools (if any) ∩ per-run allow (if any),
 * minus risk-profile excluded_tools and per-run exclude. The same excluded set is checked
 * again at execution time, so a hidden tool can neither be advertised nor run.
 */
import type { AgentConfig, RiskProfileConfig } from '../../schemas/config.js'
import { TollgateError } from '../errors.js'
import type { ToolCatalog } from './registry.js'
import type { Tool, ToolSpec } from './tool.js'

export interface ToolNarrowing {
  allow?: readonly string[]
  exclude?: readonly string[]
}

/** Excluded names compare trimmed and case-insensitively, in spec building and execution alike. */
export function normaliseToolName (name: string): string {
  return name.trim().toLowerCase()
}

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
}

export function assembleScopedRegistry (options: AssembleOptions): ScopedRegistry {
  const { catalog, agent, risk, narrowing } = options
  const bundle = agent.tools.flatMap((name) => {
    const tool = catalog.get(name)
    return tool === undefined ? [] : [tool]
  })
  const riskAllowed = risk.allowed_tools.length === 0 ? null : new Set(risk.allowed_tools)
  let admitted = riskAllowed === null ? bundle : bundle.filter((t) => riskAllowed.has(t.name))

  const excluded = [...risk.excluded_tools, ...(narrowing?.exclude ?? [])]
  if (narrowing?.allow !== undefined) {
    const hidden = new Set(excluded.map(normaliseToolName))
    // Asking for a tool policy hides is a client mistake worth naming, not a silent no-op.
    const names = new Set(admitted.filter((t) => !hidden.has(normaliseToolName(t.name))).map((t) => t.name))
    const unknown = narrowing.allow.filter((n) => !names.has(n))
    if (unknown.length > 0) {
      throw new TollgateError('UNKNOWN_TOOL', 'tools.allow names a tool this agent does not have', {
        detail: `not available to this agent: ${unknown.join(', ')}`
      })
    }
    const allow = new Set(narrowing.allow)
    admitted = admitted.filter((t) => allow.has(t.name))
  }
  return new ScopedRegistry(admitted, excluded)
}
