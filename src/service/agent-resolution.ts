/**
 * From configuration to what the engine runs with: the agent's profiles, its model binding
 * (provider, model, price, fallbacks), the runtime knobs and the resolved execution of a turn
 * (src/turn/context.ts's types). The engine itself never reads configuration: everything it needs
 * is resolved here, once per turn, and for delegated sub-turns through the agent directory.
 */
import type { AgentConfig, Config, RiskProfileConfig, RuntimeProfileConfig } from '../../schemas/config.js'
import type { ClientToolDeclaration } from '../../schemas/client-tools.js'
import type { PermissionBook } from '../approval/permission-book.js'
import type { SessionGrants } from '../approval/grants.js'
import { ApprovalManager } from '../approval/policy.js'
import { modelNameFor } from '../core/agent-model.js'
import { TollgateError } from '../core/errors.js'
import { ownEntry } from '../core/json/own.js'
import type { Observer } from '../observe/observer.js'
import { priceFor } from '../providers/pricing.js'
import type { ModelProvider } from '../providers/types.js'
import type { ToolCatalog } from '../tools/catalog.js'
import { clientTools } from '../tools/client-tools.js'
import type { FileOwner, McpToolSource } from '../tools/contract.js'
import { mcpOffer } from '../tools/scope/offer.js'
import { assembleScopedTools, ScopedRegistry, type ToolNarrowing } from '../tools/scope/scoped.js'
import type { ReceiptGenerator, ResolvedAgentExecution, ModelBinding, RuntimeKnobs } from '../turn/context.js'
import type { ToolHooks } from '../turn/hooks.js'
import type { AgentDirectory, DelegateTarget } from '../turn/subturn.js'

export interface ResolveOptions {
  config: Config
  agentName: string
  catalog: ToolCatalog
  providers: ReadonlyMap<string, ModelProvider>
  observer: Observer
  hooks: ToolHooks
  /** The session's `always` grants for this agent. */
  grants: SessionGrants
  narrowing?: ToolNarrowing
  channel: string
  receiptGenerator?: (profile: RuntimeProfileConfig) => ReceiptGenerator | null
  /** Connected MCP servers; absent: the agent gets no MCP tools. */
  mcp?: McpToolSource
  /** The turn's user message (dynamic tool_filter_groups match against it). */
  message?: string
  /** The workspace folder of the turn's principal (and session), created on the first call. */
  workspaceDir: () => string
  /** Who the tenant's workspace belongs to; null: the gateway's own user. */
  workspaceOwner: FileOwner | null
  tenant?: string
  /** Tools the turn's client runs (`client_tools`), added to the scoped tools. */
  clientTools?: readonly ClientToolDeclaration[]
  /** The turn request's `approval_timeout_ms`, if it gave one. */
  approvalTimeoutMs?: number
  /** The risk profiles' compiled permission rules; absent: no profile has any. */
  permissions?: PermissionBook
}

export function resolveAgent (
  config: Config, name: string
): { agent: AgentConfig, runtime: RuntimeProfileConfig, risk: RiskProfileConfig } {
  const agent = ownEntry(config.agents, name)
  if (agent === undefined) throw new TollgateError('UNKNOWN_AGENT', `unknown agent ${JSON.stringify(name)}`)
  // Config loading checked that the profiles exist.
  const runtime = ownEntry(config.runtime_profiles, agent.runtime_profile) as RuntimeProfileConfig
  const risk = ownEntry(config.risk_profiles, agent.risk_profile) as RiskProfileConfig
  return { agent, runtime, risk }
}

function bindingOf (config: Config, name: string, model: string, providers: ReadonlyMap<string, ModelProvider>): ModelBinding {
  const provider = providers.get(name)
  if (provider === undefined) throw new TollgateError('INTERNAL', `provider ${name} is not built`)
  const providerConfig = ownEntry(config.providers, name)
  const binding: ModelBinding = {
    provider,
    model,
    price: priceFor(providerConfig?.pricing, model),
    maxOutputTokens: providerConfig?.max_tokens ?? config.budgets.assumed_max_output_tokens
  }
  if (providerConfig?.temperature !== undefined) binding.temperature = providerConfig.temperature
  return binding
}

export function resolveModelBinding (config: Config, agent: AgentConfig, providers: ReadonlyMap<string, ModelProvider>): ModelBinding {
  const model = bindingOf(config, agent.provider, modelNameFor(config, agent), providers)
  // The agent's `model` names a model of its own provider; a fallback answers with its provider's default.
  const fallbacks = agent.fallback_providers.map((name) => bindingOf(config, name, ownEntry(config.providers, name)?.model ?? 'default', providers))
  if (fallbacks.length > 0) model.fallbacks = fallbacks
  return model
}

/**
 * The approval wait of a turn: its own request, else its agent's, else the gateway default; never
 * beyond `turns.max_approval_timeout_ms` (a client cannot hold a call open for longer).
 */
export function approvalTimeout (config: Config, agent: AgentConfig, requestedMs?: number): number {
  return Math.min(requestedMs ?? agent.approval_timeout_ms ?? config.turns.approval_timeout_ms, config.turns.max_approval_timeout_ms)
}

export function resolveKnobs (
  config: Config, runtime: RuntimeProfileConfig, agent: AgentConfig, requestedApprovalMs?: number
): RuntimeKnobs {
  return {
    maxIterations: runtime.max_tool_iterations === 0 ? 10 : runtime.max_tool_iterations,
    parallelTools: runtime.parallel_tools,
    maxToolResultBytes: runtime.max_tool_result_bytes,
    maxEventOutputBytes: config.turns.max_event_output_bytes,
    dedupEnabled: runtime.dedup_enabled,
    dedupScope: runtime.dedup_scope,
    // Re-entrant agent tools must be able to run twice with the same brief.
    dedupExempt: new Set([...runtime.tool_call_dedup_exempt, 'delegate', 'spawn_subagent']),
    strictToolParsing: runtime.strict_tool_parsing,
    maxIterationBehavior: runtime.max_iteration_behavior,
    loopDetection: runtime.loop_detection,
    approvalTimeoutMs: approvalTimeout(config, agent, requestedApprovalMs),
    onNoBackchannel: agent.on_no_backchannel,
    toolProgress: {
      maxPerSecond: config.turns.tool_progress.max_events_per_second,
      maxPerCall: config.turns.tool_progress.max_events_per_call,
      maxMessageBytes: config.turns.tool_progress.max_message_bytes
    },
    argumentBounds: { maxDepth: config.turns.tool_arguments.max_depth, maxChars: config.turns.tool_arguments.max_chars },
    showReasoning: agent.show_reasoning
  }
}

/** The scoped tools plus the turn's client tools; the operator's exclusions apply to them too. */
function withClientTools (
  registry: ScopedRegistry, catalog: ToolCatalog, declarations: readonly ClientToolDeclaration[] | undefined
): ScopedRegistry {
  if (declarations === undefined || declarations.length === 0) return registry
  const added = clientTools(declarations, (name) => catalog.has(name) || registry.get(name) !== undefined)
  return new ScopedRegistry([...registry.list(), ...added], registry.excluded)
}

export function resolveTurnContext (options: ResolveOptions): ResolvedAgentExecution {
  const { config, agentName } = options
  const { agent, runtime, risk } = resolveAgent(config, agentName)
  const model = resolveModelBinding(config, agent, options.providers)
  const offer = mcpOffer(config, agent, runtime, options.mcp)
  const scoped = assembleScopedTools({
    catalog: options.catalog,
    agent,
    risk,
    ...(options.narrowing === undefined ? {} : { narrowing: options.narrowing }),
    ...(offer === undefined ? {} : { mcp: offer }),
    ...(options.message === undefined ? {} : { message: options.message })
  })
  const generator = runtime.tool_receipts.enabled ? options.receiptGenerator?.(runtime) ?? null : null
  return {
    agent: agentName,
    channel: options.channel,
    model,
    registry: withClientTools(scoped.registry, options.catalog, options.clientTools),
    approval: new ApprovalManager(risk, options.grants, options.permissions?.forProfile(agent.risk_profile) ?? null),
    observer: options.observer,
    hooks: options.hooks,
    knobs: resolveKnobs(config, runtime, agent, options.approvalTimeoutMs),
    systemPrompt: agent.system_prompt,
    activated: scoped.activated,
    deferred: scoped.deferred,
    receipts: generator === null
      ? null
      : {
          generator, showInResponse: runtime.tool_receipts.show_in_response,
          injectSystemPrompt: runtime.tool_receipts.inject_system_prompt
        },
    delegateDepth: 0,
    workspaceDir: options.workspaceDir,
    workspaceOwner: options.workspaceOwner,
    ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
    shellNetwork: risk.shell_network
  }
}

/** The configured agents as delegation sees them: each one's bundle, prompt, knobs and model. */
export function agentDirectory (config: Config, providers: ReadonlyMap<string, ModelProvider>): AgentDirectory {
  return {
    maxDelegateDepth: config.delegate.max_depth,
    agent: (name: string): DelegateTarget | undefined => {
      const agent = ownEntry(config.agents, name)
      if (agent === undefined) return undefined
      const { runtime } = resolveAgent(config, name)
      return {
        tools: agent.tools,
        mcpBundles: agent.mcp_bundles,
        delegateAgents: agent.delegate_agents,
        systemPrompt: agent.system_prompt,
        knobs: () => resolveKnobs(config, runtime, agent),
        model: () => resolveModelBinding(config, agent, providers)
      }
    }
  }
}
