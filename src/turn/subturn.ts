/**
 * Sub-turn derivation for `delegate`. The sub-turn's tools are a subset of what the parent turn
 * can run right now (its registry plus the tools it has activated), never more: the target
 * agent's own bundle and the requested `tools` only narrow. Specs and resolution come from the
 * same derived registry and activation set, so a delegated turn cannot advertise a tool its
 * executor cannot resolve. Policy stays the parent's: its approval manager (risk profile and
 * session grants), its excluded names and its approval backchannel.
 */
import type { TurnEvent } from '../../schemas/events.js'
import type { ToolCallRecord } from '../../schemas/turn.js'
import { createDeferredTools } from '../tools/scope/deferred.js'
import { ActivatedToolSet, TOOL_SEARCH } from '../tools/scope/activated.js'
import { ScopedRegistry } from '../tools/scope/scoped.js'
import type { Tool, ToolContext } from '../tools/contract.js'
import type { ModelBinding, ResolvedAgentExecution, RuntimeKnobs, TurnScope, TurnState } from './context.js'
import { createTurnState } from './state.js'

export const DELEGATE = 'delegate'

export interface DelegateRequest {
  agent?: string
  task: string
  tools?: readonly string[]
}

/** What delegation needs to know of an agent, resolved from configuration outside the engine. */
export interface DelegateTarget {
  /** The agent's own tool bundle: built-in tool names and MCP bundles. */
  tools: readonly string[]
  mcpBundles: readonly string[]
  /** Agents it may delegate to (besides itself). */
  delegateAgents: readonly string[]
  systemPrompt: string
  /** Its runtime knobs and model binding, resolved only for a delegation to another agent. */
  knobs: () => RuntimeKnobs
  model: () => ModelBinding
}

/** The configured agents, as the service resolves them (src/service/agent-resolution.ts). */
export interface AgentDirectory {
  readonly maxDelegateDepth: number
  agent: (name: string) => DelegateTarget | undefined
}

export interface DelegateDeps {
  agents: AgentDirectory
}

export interface SubTurn {
  exec: ResolvedAgentExecution
  state: TurnState
  /** Tool calls of the sub-turn, as recorded (they are not part of the parent's record). */
  calls: ToolCallRecord[]
}

/** Everything the parent turn can run at this moment, by name. */
function effectiveTools (exec: ResolvedAgentExecution): Map<string, Tool> {
  const tools = new Map(exec.registry.list().map((t) => [t.name, t]))
  for (const t of exec.activated?.list() ?? []) if (!exec.registry.isExcluded(t.name) && !tools.has(t.name)) tools.set(t.name, t)
  return tools
}

/** A different target agent narrows further to what its own config bundles. */
function targetAdmits (target: DelegateTarget, tool: Tool): boolean {
  if (tool.name === TOOL_SEARCH) return target.mcpBundles.length > 0
  if (tool.attribution.source.startsWith('mcp:')) return target.mcpBundles.includes(tool.attribution.source.slice('mcp:'.length))
  return target.tools.includes(tool.name)
}

export function deriveSubTurn (
  deps: DelegateDeps, scope: TurnScope, request: DelegateRequest, ctx: ToolContext
): SubTurn | { error: string } {
  const { agents } = deps
  const maxDepth = agents.maxDelegateDepth
  const parent = scope.exec
  const depth = parent.delegateDepth + 1
  if (depth > maxDepth) return { error: `delegation is limited to ${maxDepth} level(s)` }

  const targetName = request.agent ?? parent.agent
  const target = agents.agent(targetName)
  const parentAgent = agents.agent(parent.agent)
  if (target === undefined || (targetName !== parent.agent && parentAgent?.delegateAgents.includes(targetName) !== true)) {
    return { error: `agent ${JSON.stringify(targetName)} is not one this agent may delegate to` }
  }
  const effective = effectiveTools(parent)
  const requested = request.tools === undefined ? null : new Set(request.tools)
  const unknown = [...(requested ?? [])].filter((n) => !effective.has(n))
  if (unknown.length > 0) return { error: `not available to this turn: ${unknown.join(', ')}` }

  const sameAgent = targetName === parent.agent
  const keep = (t: Tool): boolean =>
    (requested === null || requested.has(t.name)) &&
    (sameAgent || targetAdmits(target, t)) &&
    (t.name !== DELEGATE || depth < maxDepth)

  let activated: ActivatedToolSet | null = null
  if (parent.activated !== null) {
    activated = new ActivatedToolSet()
    for (const t of parent.activated.list()) if (keep(t) && !parent.registry.isExcluded(t.name)) activated.activate(t)
  }
  const statics = parent.registry.list().filter(keep)
  let deferred: ResolvedAgentExecution['deferred'] = null
  if (parent.deferred !== null && activated !== null && statics.some((t) => t.name === TOOL_SEARCH)) {
    // tool_search works on the calling turn's deferred set: the sub-turn gets its own over the
    // parent's stubs, activating into the sub-turn's set, never the parent's.
    const stubs = [...parent.deferred.stubs.values()].filter((s) => sameAgent || targetAdmits(target, s))
    deferred = createDeferredTools(stubs, activated)
  }

  const knobs: RuntimeKnobs = sameAgent
    ? parent.knobs
    : {
        ...target.knobs(),
        // Approvals of a sub-turn go to the parent turn's operators under its policy, so they wait as its own do.
        approvalTimeoutMs: parent.knobs.approvalTimeoutMs,
        onNoBackchannel: parent.knobs.onNoBackchannel
      }
  const exec: ResolvedAgentExecution = {
    agent: targetName,
    channel: parent.channel,
    model: sameAgent ? parent.model : target.model(),
    registry: new ScopedRegistry(statics, parent.registry.excluded),
    approval: parent.approval,
    observer: parent.observer,
    hooks: parent.hooks,
    knobs,
    systemPrompt: target.systemPrompt,
    activated,
    deferred,
    receipts: parent.receipts,
    delegateDepth: depth,
    // The sub-turn acts for the same principal, under the parent's policy.
    workspaceDir: parent.workspaceDir,
    workspaceOwner: parent.workspaceOwner,
    shellNetwork: parent.shellNetwork,
    ...(parent.tenant === undefined ? {} : { tenant: parent.tenant })
  }

  const calls: ToolCallRecord[] = []
  const parentState = scope.state
  const state = createTurnState({
    // Observer records and approval audit entries carry the parent turn's ids.
    turnId: parentState.turnId,
    sessionId: parentState.sessionId,
    history: [{ role: 'user', content: request.task }],
    signal: ctx.signal,
    interactive: parentState.interactive,
    log: ctx.log,
    logBindings: { delegate_agent: targetName, delegate_depth: depth },
    loopDetection: knobs.loopDetection,
    // Only approval events surface on the parent stream: the sub-turn's tool calls (and their
    // tool.progress) are not calls of the parent model and would break its one-result-per-call pairing.
    emit: (event: TurnEvent) => {
      if (event.kind === 'approval.requested' || event.kind === 'approval.resolved') parentState.emit(event)
    },
    approvals: parentState.approvals,
    recordToolCall: (record) => { calls.push(record) },
    recordApproval: (entry) => { parentState.recordApproval(entry) },
    // The sub-turn's model calls are the turn's calls too: its tokens count in the turn's usage.
    recordCallUsage: (usage, cost) => { parentState.recordCallUsage(usage, cost) },
    // Its calls spend the parent turn's budgets.
    ...(parentState.spending === undefined ? {} : { spending: parentState.spending }),
    ...(parentState.tenant === undefined ? {} : { tenant: parentState.tenant }),
    // Shared: repeating a prompt-required shell call through a sub-turn aborts it, as in the parent.
    promptShellSignatures: parentState.promptShellSignatures
  })
  return { exec, state, calls }
}
