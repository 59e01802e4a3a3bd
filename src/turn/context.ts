/**
 * Turn context resolution. `ResolvedAgentExecution` is resolved ONCE when a turn starts and holds
 * every stable dependency the loop needs; per-message state (history, signal, event sink,
 * approval backchannel) lives in `TurnState`. Nothing inside the loop or a tool looks config up.
 */
import type { PermissionBook } from '../approval/permission-book.js'
import type { Logger } from 'pino'
import type { AgentConfig, Config, ModelPrice, RiskProfileConfig, RuntimeProfileConfig } from '../../schemas/config.js'
import type { ApprovalAuditEntry, ToolCallRecord } from '../../schemas/turn.js'
import type { TurnEvent } from '../../schemas/events.js'
import type { SessionGrants } from '../approval/grants.js'
import { ApprovalManager } from '../approval/policy.js'
import type { ApprovalChannel } from '../approval/decision.js'
import type { JsonBounds } from '../core/json/bounds.js'
import { ownEntry } from '../core/json/own.js'
import { TollgateError } from '../core/errors.js'
import type { Observer } from '../observe/observer.js'
import type { ChatMessage, ChatUsage, ModelProvider } from '../providers/types.js'
import type { DeferredTools } from '../tools/scope/deferred.js'
import type { FileOwner, McpToolSource, TurnHandle } from '../tools/contract.js'
import { mcpOffer } from '../tools/scope/offer.js'
import type { ActivatedToolSet } from '../tools/scope/activated.js'
import type { ToolCatalog } from '../tools/catalog.js'
import { assembleScopedTools, ScopedRegistry, type ToolNarrowing } from '../tools/scope/scoped.js'
import { clientTools } from '../tools/client-tools.js'
import type { ClientToolDeclaration } from '../../schemas/client-tools.js'
import type { ToolHooks } from './hooks.js'
import { LoopDetector } from './loop-detector.js'
import { priceFor } from '../providers/pricing.js'
import type { CallSpending } from './spending.js'
import type { ProgressLimits } from './progress.js'
import { modelNameFor } from '../core/agent-model.js'
import type { SteeringQueue } from './steering.js'

export interface ModelBinding {
  provider: ModelProvider
  model: string
  temperature?: number
  /** `agents.<a>.fallback_providers`, in order, each with its provider's default model. */
  fallbacks?: readonly ModelBinding[]
  /** The model's configured price; null: its calls cost an unknown amount. */
  price: ModelPrice | null
  /** Output tokens a call may produce at most, as a budget reserves them. */
  maxOutputTokens: number
}

export interface RuntimeKnobs {
  maxIterations: number
  parallelTools: boolean
  maxToolResultChars: number
  maxEventOutputChars: number
  dedupEnabled: boolean
  dedupScope: 'turn' | 'round'
  dedupExempt: ReadonlySet<string>
  strictToolParsing: boolean
  maxIterationBehavior: 'graceful_summary' | 'error'
  loopDetection: RuntimeProfileConfig['loop_detection']
  approvalTimeoutMs: number
  /** No operator connected: `wait` for one (REST, a later subscriber) or `deny` at once. */
  onNoBackchannel: 'wait' | 'deny'
  toolProgress: ProgressLimits
  /** How deep and long a call's arguments may be (parsing refuses a call past them). */
  argumentBounds: JsonBounds
  /** `agents.<a>.show_reasoning`: the model's reasoning goes out as `reasoning.delta` events. */
  showReasoning: boolean
}

export interface ReceiptInput {
  turnId: string
  callId: string
  tool: string
  arguments: unknown
  output: string
}

/** Signs successful executions; key lifetime is the generator's own business. */
export interface ReceiptGenerator {
  sign (input: ReceiptInput): string
}

export interface ReceiptOptions {
  generator: ReceiptGenerator
  showInResponse: boolean
  injectSystemPrompt: boolean
}

export interface ResolvedAgentExecution {
  agent: string
  channel: string
  model: ModelBinding
  registry: ScopedRegistry
  approval: ApprovalManager
  observer: Observer
  hooks: ToolHooks
  knobs: RuntimeKnobs
  systemPrompt: string
  /** Deferred-tool activation set; null when the agent has no deferred tools. */
  activated: ActivatedToolSet | null
  /** Deferred MCP stubs and their prompt section; null unless deferred loading offers some. */
  deferred: DeferredTools | null
  receipts: ReceiptOptions | null
  /** 0 for a turn; n for a sub-turn n `delegate` calls deep. */
  delegateDepth: number
  /**
   * The folder this turn's tools act in: its tenant's (or session's) workspace, looked up (and
   * created if missing) when a tool first asks, so a turn whose tools never touch files costs no
   * file-system call.
   */
  workspaceDir: () => string
  /** Who that workspace belongs to (the tenant's sandbox user), when not the gateway's user. */
  workspaceOwner: FileOwner | null
  /** The risk profile's `shell_network`: sandboxed commands may reach the network. */
  shellNetwork: boolean
  /** The tenant the turn acts for; tools get it in `ToolContext.tenant` (absent in engine tests). */
  tenant?: string
}

/**
 * What the engine hands a turn-scoped tool: the narrow `TurnHandle` of the tool contract plus
 * the engine's own execution and state, which only engine-side tools (`delegate`) read.
 */
export interface TurnScope extends TurnHandle {
  exec: ResolvedAgentExecution
  state: TurnState
}

export function turnScope (exec: ResolvedAgentExecution, state: TurnState): TurnScope {
  return { deferred: exec.deferred, exec, state }
}

export function isTurnScope (handle: TurnHandle): handle is TurnScope {
  return 'exec' in handle && 'state' in handle
}

/** Per-turn mutable state; owned by one running turn, never shared. */
export interface TurnState {
  turnId: string
  sessionId: string
  /** Provider-visible transcript; the loop appends to it in provider order. */
  history: ChatMessage[]
  signal: AbortSignal
  interactive: boolean
  /** Messages a person added while the turn runs; absent for delegated sub-turns (they take none). */
  steering?: SteeringQueue
  /** Durable turns: true once the gateway is stopping; no further tool of a sequential round starts. */
  holding?: () => boolean
  log: Logger
  emit (event: TurnEvent): void
  approvals: ApprovalChannel
  recordToolCall (record: ToolCallRecord): void
  recordApproval (entry: ApprovalAuditEntry): void
  /**
   * One answered model call's provider-reported usage (undefined: none reported), its USD (null:
   * unknown) and, for the turn's own calls, the provider that answered; sub-turns add theirs to the parent's.
   */
  recordCallUsage (usage: ChatUsage | undefined, cost: number | null, provider?: string): void
  /** The turn's budgets: each model call is reserved against them before it is made. Absent: none apply. */
  spending?: CallSpending
  /** The tenant the turn runs for (metrics labels). */
  tenant?: string
  /** Prompt-required shell signatures seen in earlier rounds of this turn. */
  promptShellSignatures: Set<string>
  /** Dedup signatures; cleared every round when the knob says `round`. */
  dedupSignatures: Set<string>
  loopDetector: LoopDetector
  /** Notes the loop detector adds to the system prompt for the rest of the turn. */
  systemNotes: string[]
  iteration: number
  startedAt: number
  lastOutputHash: string | null
  identicalOutputCount: number
  receipts: string[]
}

export type LoopBookkeeping = Pick<TurnState, 'dedupSignatures' | 'loopDetector' | 'systemNotes' | 'iteration' | 'startedAt' | 'lastOutputHash' | 'identicalOutputCount' | 'receipts'>

/** The loop bookkeeping every turn, and every delegated sub-turn, starts from. */
export function freshLoopBookkeeping (runtime: RuntimeProfileConfig): LoopBookkeeping {
  return {
    dedupSignatures: new Set(),
    loopDetector: new LoopDetector({
      enabled: runtime.loop_detection.enabled,
      windowSize: runtime.loop_detection.window_size,
      maxRepeats: runtime.loop_detection.max_repeats
    }),
    systemNotes: [],
    iteration: 0,
    startedAt: Date.now(),
    lastOutputHash: null,
    identicalOutputCount: 0,
    receipts: []
  }
}

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
    maxToolResultChars: runtime.max_tool_result_chars,
    maxEventOutputChars: config.turns.max_event_output_chars,
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
