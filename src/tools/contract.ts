/**
 * Tool definition: the one shape every capability the model can call has, built-in or MCP.
 * Tools do not log, ask for approval or emit events themselves; the dispatcher owns all of that.
 */
import { Ajv, type ValidateFunction, type ErrorObject } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { Logger } from 'pino'
import { fail, type ToolResult } from './result.js'

export { fail, ok, type ToolResult } from './result.js'

// ajv-formats ships CJS with a default export; under NodeNext the callable sits on `.default`.
type AddFormats = (ajv: Ajv) => Ajv
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats

export type JsonSchema = Record<string, unknown>

export type ToolProvenance = 'native' | 'extension'

/** Where a tool came from; an unresolvable tool has no attribution and is untrusted. */
export interface ToolAttribution {
  provenance: ToolProvenance
  /** e.g. `builtin`, `mcp:<server>` */
  source: string
}

/**
 * What one call does to the world: `read` only observes; `write` may change something (files,
 * processes, remote state). A read-only risk profile runs `read` calls only.
 */
export type ToolEffect = 'read' | 'write'

/**
 * The deferred MCP tools of a running turn, as `tool_search` sees them: the stubs it may fetch
 * and the turn's activation set it fetches into (tools/scope/deferred.ts builds it).
 */
export interface DeferredToolView {
  readonly stubs: ReadonlyMap<string, Tool>
  readonly activated: { activate (tool: Tool): boolean }
}

/**
 * The running turn, handed only to tools defined with `turnScoped: true`. Narrow on purpose: a
 * tool contract that exposed the engine's state would make every tool depend on the engine. The
 * engine hands its own richer scope (turn/context.ts `TurnScope`), which only engine-side tools
 * (`delegate`) narrow to with `isTurnScope`.
 */
export interface TurnHandle {
  readonly deferred: DeferredToolView | null
}

/** One task of a plan a tool reports (the Agent Client Protocol's plan entry). */
export interface ToolPlanEntry {
  content: string
  status: 'pending' | 'in_progress' | 'completed'
  /** `medium` when absent. */
  priority?: 'high' | 'medium' | 'low'
}

/**
 * A running call's progress as the tool knows it; every field optional (MCP's progress
 * notification shape), plus `plan`: the whole list of tasks with their status, which replaces the
 * last plan reported (a to-do or planning tool; editors show it as the agent's plan).
 */
export interface ToolProgress {
  progress?: number
  total?: number
  message?: string
  plan?: readonly ToolPlanEntry[]
}

/** A user and group to act as: the owner of a workspace whose sandbox runs as another user than the gateway. */
export interface FileOwner {
  uid: number
  gid: number
}

export interface ToolContext {
  /** Fires when the turn is cancelled; tools must stop promptly. */
  signal: AbortSignal
  turnId: string
  sessionId: string
  callId: string
  /** The tenant of the turn's principal; absent only where no turn exists (direct calls in tests). */
  tenant?: string
  log: Logger
  /**
   * The only folder this call may touch: its tenant's workspace (or its session's), resolved by
   * the engine from the turn's principal. Absolute, canonical, existing: looked up (and made if
   * missing) on the turn's first read of this property, so read it only when the call needs it.
   */
  workspaceDir: string
  /**
   * Who the workspace belongs to when that is not the gateway's own user (a root gateway whose
   * sandbox runs as another uid): file operations in it run as this user, never as root. Null:
   * the gateway's user acts itself. Given per turn, from the turn's tenant.
   */
  workspaceOwner: FileOwner | null
  /** Whether a sandboxed process this call starts may reach the network (the risk profile's `shell_network`). */
  network: boolean
  /** Set only for tools defined with `turnScoped: true`. */
  turn?: TurnHandle
  /**
   * Where a long-running tool reports progress; the dispatcher scrubs, bounds and rate limits it
   * into `tool.progress` events, and ignores reports once the call has settled. Absent: nobody listens.
   */
  progress?: (update: ToolProgress) => void
}

/** The risk label an approver sees (schemas/approval.ts `ApprovalRisk`). */
export type ToolRisk = 'low' | 'medium' | 'high'

/** What a tool's own approval condition may look at: the call's turn, never engine state. */
export interface ApprovalCheckContext {
  turnId: string
  sessionId: string
  callId: string
  tenant?: string
  signal: AbortSignal
}

/**
 * A tool's own say in whether a call is asked about (the AI SDK's and OpenAI Agents SDK's
 * `needsApproval`). It only narrows the risk profile's default: see src/approval/conditional.ts.
 */
export type ApprovalCondition = (args: Record<string, unknown>, ctx: ApprovalCheckContext) => boolean | Promise<boolean>

export interface ToolSpec {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema
}

export interface Tool {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema
  readonly attribution: ToolAttribution
  /**
   * Acts on the running turn (runs a nested one, activates deferred tools) and so receives it in
   * `ctx.turn`; no other tool sees the turn.
   */
  readonly turnScoped?: boolean
  /** Built once per tool and shared by every provider request (never re-cloned per iteration). */
  readonly spec: ToolSpec
  /** Classifies one call by its (schema-valid) arguments; a tool without it is side-effecting (`callEffect`). */
  readonly effects?: (args: Record<string, unknown>) => ToolEffect
  /** Whether this call needs a person (src/approval/conditional.ts); absent: the risk profile alone decides. */
  readonly needsApproval?: ApprovalCondition
  /** The risk label approvers see for every call; absent: classified from the call's effect. */
  readonly risk?: ToolRisk
  /** Runs in the turn's client (declared with the turn): the gate waits for the client's result instead of dispatching it. */
  readonly runsInClient?: boolean
  /** Returns a human-readable problem with the arguments, or null when they match the schema. */
  validateArgs (args: unknown): string | null
  /** Checks the arguments against the schema (a failure is the call's result), then runs the call. */
  execute (args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult>
  /**
   * Runs the call without checking the arguments again: for the dispatcher, whose preparation
   * validated these very arguments with `validateArgs` (schemas are checked once per call).
   */
  executeValidated (args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult>
}

export interface ToolDefinition<A = Record<string, unknown>> {
  name: string
  description: string
  parameters: JsonSchema
  attribution?: ToolAttribution
  turnScoped?: boolean
  /** One effect for every call, or a classifier of the call's arguments; absent: `write`. */
  effects?: ToolEffect | ((args: A) => ToolEffect)
  /** A fixed answer or a condition on the call's (schema-valid) arguments. */
  needsApproval?: boolean | ((args: A, ctx: ApprovalCheckContext) => boolean | Promise<boolean>)
  risk?: ToolRisk
  runsInClient?: boolean
  execute (args: A, ctx: ToolContext): Promise<ToolResult>
}

const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/

/** One ajv instance per process for tool argument schemas; each schema is compiled once. */
const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: true })
addFormats(ajv)

function describeErrors (errors: ErrorObject[] | null | undefined): string {
  if (errors == null || errors.length === 0) return 'arguments do not match the schema'
  return errors
    .slice(0, 5)
    .map((e) => `${e.instancePath === '' ? '(root)' : e.instancePath} ${e.message ?? 'is invalid'}`)
    .join('; ')
}

function compileSchema (schema: JsonSchema): ValidateFunction | null {
  try {
    return ajv.compile(schema)
  } catch {
    // A foreign (e.g. MCP) schema ajv cannot compile must not take the tool away: the tool's own
    // input handling is then the only check, as it would be without Tollgate.
    return null
  }
}

export function defineTool<A = Record<string, unknown>> (def: ToolDefinition<A>): Tool {
  if (!NAME_PATTERN.test(def.name)) {
    throw new Error(`invalid tool name ${JSON.stringify(def.name)}: use 1-64 of [A-Za-z0-9_-]`)
  }
  const parameters = Object.freeze({ ...def.parameters })
  const validate = compileSchema(parameters)
  const spec: ToolSpec = Object.freeze({ name: def.name, description: def.description, parameters })
  const tool: Tool = {
    name: def.name,
    description: def.description,
    parameters,
    attribution: def.attribution ?? { provenance: 'native', source: 'builtin' },
    turnScoped: def.turnScoped === true,
    spec,
    ...effectsOf(def.effects as ToolDefinition['effects']),
    ...approvalOf(def.needsApproval as ToolDefinition['needsApproval']),
    ...(def.risk === undefined ? {} : { risk: def.risk }),
    ...(def.runsInClient === true ? { runsInClient: true } : {}),
    validateArgs (args: unknown): string | null {
      if (validate === null) return null
      return validate(args) ? null : describeErrors(validate.errors)
    },
    // Arguments are checked here for every tool, so no tool re-implements the check and direct
    // callers (embedders, tests) get the same guarantee as the dispatcher, which checked them in
    // preparation and calls executeValidated.
    async execute (args, ctx) {
      const problem = tool.validateArgs(args)
      if (problem !== null) return fail(`invalid arguments: ${problem}`)
      return await (def.execute as Tool['execute'])(args, ctx)
    },
    async executeValidated (args, ctx) {
      return await (def.execute as Tool['execute'])(args, ctx)
    }
  }
  return Object.freeze(tool)
}

function effectsOf (effects: ToolDefinition['effects']): Pick<Tool, 'effects'> {
  if (effects === undefined) return {}
  return { effects: typeof effects === 'function' ? effects : () => effects }
}

function approvalOf (needsApproval: ToolDefinition['needsApproval']): Pick<Tool, 'needsApproval'> {
  if (needsApproval === undefined) return {}
  return { needsApproval: typeof needsApproval === 'function' ? needsApproval : () => needsApproval }
}

/**
 * The effect of one call. Unknown means side-effecting: a tool that does not classify its calls,
 * or whose classifier throws, counts as `write`.
 */
export function callEffect (tool: Tool, args: Record<string, unknown>): ToolEffect {
  try {
    return tool.effects?.(args) === 'read' ? 'read' : 'write'
  } catch {
    return 'write'
  }
}

/** What turn assembly needs from MCP: the current wrappers of some servers. */
export interface McpToolSource {
  tools (servers: readonly string[]): Tool[]
}
