/**
 * Turn context resolution. `ResolvedAgentExecution` is resolved ONCE when a turn starts and holds
 * every stable dependency the loop needs; per-message state (history, signal, event sink,
 * approval backchannel) lives in `TurnState`. Nothing inside the loop or a tool looks config up.
 */
import type { Logger } from 'pino'
import type { ApprovalAuditEntry, ToolCallRecord } from '../../schemas/turn.js'
import type { TurnEvent } from '../../schemas/events.js'
import type { ApprovalManager } from '../approval/policy.js'
import type { ApprovalChannel } from '../approval/decision.js'
import type { JsonBounds } from '../core/json/bounds.js'
import type { Observer } from '../observe/observer.js'
import type { ChatMessage, ChatUsage, ModelProvider } from '../providers/types.js'
import type { DeferredTools } from '../tools/scope/deferred.js'
import type { FileOwner, TurnHandle } from '../tools/contract.js'
import type { ActivatedToolSet } from '../tools/scope/activated.js'
import type { ScopedRegistry } from '../tools/scope/scoped.js'
import type { ToolHooks } from './hooks.js'
import type { LoopDetector } from './loop-detector.js'
import type { ModelPrice } from '../providers/pricing.js'
import type { CallSpending } from './spending.js'
import type { ProgressLimits } from './progress.js'
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

/** The loop detector's settings (a runtime profile's `loop_detection`). */
export interface LoopDetectionKnobs {
  enabled: boolean
  window_size: number
  max_repeats: number
  ignore_tools: readonly string[]
  identical_output_min_elapsed_ms: number | null
}

export interface RuntimeKnobs {
  maxIterations: number
  parallelTools: boolean
  maxToolResultBytes: number
  maxEventOutputBytes: number
  dedupEnabled: boolean
  dedupScope: 'turn' | 'round'
  dedupExempt: ReadonlySet<string>
  strictToolParsing: boolean
  maxIterationBehavior: 'graceful_summary' | 'error'
  loopDetection: LoopDetectionKnobs
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
