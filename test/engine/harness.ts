/**
 * Engine-level harness: runs the turn engine (`runToolLoop`, i.e. `loop()` in src/turn/loop.ts) in
 * process, with no server and no HTTP. The model is a scripted implementation of the engine's own
 * provider seam (`ModelProvider`), state is in memory, and approvals come from a scripted
 * `ApprovalChannel`. The agent, tools and knobs are resolved from a real config by the same
 * `resolveTurnContext` the service uses, so only the transport and persistence are left out.
 *
 * End-to-end behaviour (wire events, persistence, sockets) stays in test/integration.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import type { ApprovalAuditEntry, ToolCallRecord } from '../../schemas/turn.js'
import type { TurnEvent } from '../../schemas/events.js'
import { eventShape } from '../helpers/shape.js'
import { LOCAL_PRINCIPAL } from '../../src/auth/principal.js'
import { buildCatalog } from '../../src/app/server.js'
import { SessionGrants } from '../../src/approval/grants.js'
import type { ApprovalChannel, ApprovalQuestion, ApprovalReply } from '../../src/approval/decision.js'
import { loadConfig } from '../../src/core/config.js'
import type { Observer, ObserverEvent } from '../../src/observe/observer.js'
import type { ChatCallOptions, ChatMessage, ChatRequest, ChatResponse, ModelProvider } from '../../src/providers/types.js'
import type { ResolvedAgentExecution, TurnState } from '../../src/turn/context.js'
import { createTurnState } from '../../src/turn/state.js'
import { resolveTurnContext } from '../../src/service/agent-resolution.js'
import { NO_HOOKS, type ToolHooks } from '../../src/turn/hooks.js'
import type { Tool } from '../../src/tools/contract.js'
import { CancelReason, runToolLoop, type TurnOutcome } from '../../src/turn/loop.js'
import { createProbes, probeOverrides, type Probes } from '../helpers/tools.js'

export interface ScriptedToolCall {
  id: string
  name: string
  /** An object is sent as its JSON text; a string is sent exactly as written. */
  arguments: Record<string, unknown> | string
}

export interface ScriptedTurn {
  text?: string
  toolCalls?: ScriptedToolCall[]
}

/** A `ModelProvider` that answers each chat call with the next scripted reply and records the request. */
export class ScriptedProvider implements ModelProvider {
  readonly name = 'scripted'
  readonly kind = 'scripted'
  readonly requests: ChatRequest[] = []
  private readonly queue: ScriptedTurn[] = []

  constructor (readonly nativeTools = true) {}

  enqueue (...turns: ScriptedTurn[]): void {
    this.queue.push(...turns)
  }

  async chat (request: ChatRequest, options: ChatCallOptions): Promise<ChatResponse> {
    // The loop keeps appending to its history; the recorded request is what the model saw then.
    this.requests.push(structuredClone({ ...request, messages: [...request.messages] }))
    if (options.signal.aborted) throw options.signal.reason
    const next = this.queue.shift()
    if (next === undefined) throw new Error('scripted provider: no scripted reply left')
    const text = next.text ?? ''
    if (text !== '') options.onTextDelta?.(text)
    const toolCalls = (next.toolCalls ?? []).map((c) => ({
      id: c.id, name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments)
    }))
    return { text, toolCalls, finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop' }
  }

  async close (): Promise<void> {}
}

/** Answers approval questions in order from a script; records every question it was asked. */
export class ScriptedApprovals implements ApprovalChannel {
  readonly questions: ApprovalQuestion[] = []
  private readonly answers: Array<ApprovalReply['decision'] | { decision: 'edit', replacement: string }>

  constructor (answers: Array<ApprovalReply['decision'] | { decision: 'edit', replacement: string }> = []) {
    this.answers = [...answers]
  }

  async ask (question: ApprovalQuestion): Promise<ApprovalReply> {
    this.questions.push(question)
    const next = this.answers.shift()
    const base = { requestId: `req_${this.questions.length}`, decidedBy: 'local/operator', channel: 'engine', principal: 'local/operator' }
    if (next === undefined) return { decision: 'no', source: 'unavailable', requestId: null, decidedBy: 'runtime', channel: 'runtime' }
    if (typeof next === 'string') return { decision: next, source: 'operator', ...base }
    return { ...next, source: 'operator', ...base }
  }
}

export interface EngineOptions {
  /** Config overrides merged over the probe agent (`probe`/`quiet` auto-approved, `risky` prompts). */
  overrides?: Record<string, unknown>
  hooks?: ToolHooks
  approvals?: ApprovalChannel
  interactive?: boolean
  /** Called with every event as it is emitted, e.g. to cancel the turn at a chosen point. */
  onEvent?: (event: TurnEvent, engine: Engine) => void
  nativeTools?: boolean
  /** Tools registered besides the probes (admit them through `overrides`). */
  tools?: Tool[]
}

export interface Engine {
  provider: ScriptedProvider
  probes: Probes
  exec: ResolvedAgentExecution
  state: TurnState
  events: TurnEvent[]
  /** Tool call records in the order the engine recorded them (slots settle out of order). */
  toolCalls: ToolCallRecord[]
  approvalsAudit: ApprovalAuditEntry[]
  observed: ObserverEvent[]
  /** The folder the turn's tools act in. */
  workspace: string
  cancel (reason?: string): void
  run (message?: string): Promise<TurnOutcome>
}

const quiet = pino({ level: 'silent' })

/** Builds an engine for one turn; the scratch workspace is removed when the test ends. */
export async function createEngine (t: { after: (fn: () => Promise<void>) => void }, options: EngineOptions = {}): Promise<Engine> {
  const root = await mkdtemp(join(tmpdir(), 'tollgate-engine-'))
  t.after(async () => { await rm(root, { recursive: true, force: true }) })
  const config = loadConfig({
    env: {},
    overrides: probeOverrides({
      log: { level: 'silent' },
      workspace: { dir: root },
      tools: { shell: { process_ledger_dir: join(root, '.tool-processes') } },
      store: { kind: 'memory' },
      providers: { scripted: { kind: 'openai', base_url: 'http://127.0.0.1:9/v1', model: 'scripted-model' } },
      agents: { default: { provider: 'scripted' } },
      ...options.overrides
    })
  })
  const provider = new ScriptedProvider(options.nativeTools ?? true)
  const probes = createProbes()
  const { catalog, workspaces, closeSandbox } = await buildCatalog(config, [...probes.tools, ...options.tools ?? []], quiet)
  t.after(closeSandbox)
  // Tools act in the tenant's folder below the root, as they do for a turn the service starts.
  const workspaceDir = workspaces.dirFor(LOCAL_PRINCIPAL.tenant, 'ses_engine')
  const observed: ObserverEvent[] = []
  const observer: Observer = { record: (e) => { observed.push(e) } }
  const exec = resolveTurnContext({
    config,
    agentName: 'default',
    catalog,
    providers: new Map([['scripted', provider]]),
    observer,
    hooks: options.hooks ?? NO_HOOKS,
    grants: new SessionGrants([]),
    channel: 'engine',
    workspaceDir: () => workspaceDir,
    workspaceOwner: workspaces.ownerFor(LOCAL_PRINCIPAL.tenant)
  })
  const controller = new AbortController()
  const events: TurnEvent[] = []
  const toolCalls: ToolCallRecord[] = []
  const approvalsAudit: ApprovalAuditEntry[] = []
  const engine: Engine = {
    provider, probes, exec, events, toolCalls, approvalsAudit, observed, workspace: workspaceDir,
    state: createTurnState({
      turnId: 'turn_engine',
      sessionId: 'ses_engine',
      history: [],
      signal: controller.signal,
      interactive: options.interactive !== false,
      log: quiet,
      loopDetection: exec.knobs.loopDetection,
      emit: (event) => {
        events.push(event)
        options.onEvent?.(event, engine)
      },
      approvals: options.approvals ?? new ScriptedApprovals(),
      recordToolCall: (r) => { toolCalls.push(r) },
      recordApproval: (e) => { approvalsAudit.push(e) },
      recordCallUsage: () => {}
    }),
    cancel: (reason = 'cancelled by test') => { controller.abort(new CancelReason(reason)) },
    run: async (message = 'go') => {
      engine.state.history.push({ role: 'user', content: message })
      return await runToolLoop(exec, engine.state)
    }
  }
  return engine
}

/** The event kinds in order, with tool names and statuses; text deltas left out. */
export const shape = eventShape

/** Tool messages the model saw in its n-th request (0-based). */
export function toolMessages (provider: ScriptedProvider, n: number): ChatMessage[] {
  return (provider.requests[n]?.messages ?? []).filter((m) => m.role === 'tool')
}

/** Tool call records in model order (iteration, then index), as the service stores them. */
export function inModelOrder (records: readonly ToolCallRecord[]): ToolCallRecord[] {
  return [...records].sort((a, b) => a.iteration - b.iteration || a.index - b.index)
}
