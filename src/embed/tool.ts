/**
 * `tool()`: an application's own function as a Tollgate tool, with the shape the AI SDK and the
 * OpenAI Agents SDK taught (parameters, execute, needsApproval). It builds on the one tool
 * contract (src/tools/contract.ts): schema checked once per call by the dispatcher, results,
 * cancellation and progress exactly as for built-in tools.
 */
import { defineTool, fail, ok, type ApprovalCheckContext, type JsonSchema, type Tool, type ToolAttribution, type ToolProgress, type ToolResult, type ToolRisk } from '../tools/contract.js'
import type { Logger } from 'pino'

/**
 * The Standard Schema interface (standardschema.dev), as far as Tollgate reads it: zod 4,
 * valibot and arktype implement it. `jsonSchema` is the Standard JSON Schema extension that
 * turns it into the JSON Schema the model is shown.
 */
export interface StandardSchema<Output = unknown> {
  readonly '~standard': {
    readonly version: 1
    readonly vendor: string
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>
    readonly jsonSchema?: { readonly input: (options: { target: string }) => Record<string, unknown> }
  }
}

type StandardResult<Output> =
  | { readonly value: Output, readonly issues?: undefined }
  | { readonly issues: readonly StandardIssue[] }

interface StandardIssue {
  readonly message: string
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>
}

/** What an embedded tool's `execute` gets: its call's turn and a way to report progress. */
export interface EmbeddedToolContext {
  turnId: string
  sessionId: string
  callId: string
  /** The tenant of the principal whose turn called the tool ("local" without authentication). */
  tenant: string
  /** Aborts when the turn is cancelled or times out: stop promptly. */
  signal: AbortSignal
  /** Becomes a `tool.progress` event (scrubbed, bounded, rate limited); ignored after the call settled. */
  progress: (update: ToolProgress) => void
  log: Logger
}

export type { ApprovalCheckContext, ToolProgress, ToolRisk, ToolAttribution }

export interface ToolOptions<A> {
  /** 1-64 of [A-Za-z0-9_-]; must not clash with a built-in tool's name. */
  name: string
  description: string
  /** A JSON Schema object, or a Standard Schema that can give one (zod 4, valibot with @valibot/to-json-schema …). */
  parameters: JsonSchema | StandardSchema<A>
  /**
   * The call's result: a string is the text the model reads; any other value is sent as JSON
   * (and kept as the result's `data`). A thrown error becomes an error result.
   */
  execute: (args: A, ctx: EmbeddedToolContext) => unknown
  /**
   * Whether a call waits for a person: a fixed answer or a condition on the arguments. Absent:
   * the risk profile decides (by default every call of a tool not in auto_approve is asked).
   * An operator's always_ask, auto_approve and the session's "always" grants still apply.
   */
  needsApproval?: boolean | ((args: A, ctx: ApprovalCheckContext) => boolean | Promise<boolean>)
  /** The risk label shown with approval requests; absent: "medium". */
  risk?: ToolRisk
  /** Where the tool comes from, in logs and traces; default `{ provenance: 'native', source: 'embedded' }`. */
  attribution?: ToolAttribution
}

function isStandardSchema (value: unknown): value is StandardSchema {
  return typeof value === 'object' && value !== null && '~standard' in value
}

function jsonSchemaOf (name: string, schema: StandardSchema): JsonSchema {
  const convert = schema['~standard'].jsonSchema
  if (convert === undefined) {
    throw new TypeError(`tool ${JSON.stringify(name)}: its ${schema['~standard'].vendor} schema cannot give a JSON Schema; pass a JSON Schema as parameters`)
  }
  const { $schema: _dialect, ...rest } = convert.input({ target: 'draft-07' })
  return rest
}

function issueText (issues: readonly StandardIssue[]): string {
  return issues.slice(0, 5).map((issue) => {
    const path = (issue.path ?? []).map((p) => String(typeof p === 'object' ? p.key : p)).join('.')
    return path === '' ? issue.message : `${path}: ${issue.message}`
  }).join('; ')
}

/** What execute returned, as the tool result. */
function resultOf (value: unknown): ToolResult {
  if (typeof value === 'string') return ok(value)
  if (value === undefined || value === null) return ok('')
  return ok(JSON.stringify(value), value)
}

export function tool<A = Record<string, unknown>> (options: ToolOptions<A>): Tool {
  const standard = isStandardSchema(options.parameters) ? options.parameters : null
  const parameters = standard === null ? options.parameters as JsonSchema : jsonSchemaOf(options.name, standard)
  // A Standard Schema also parses: execute gets its output (defaults, transforms), and a refinement
  // JSON Schema cannot express still refuses the call.
  const parse = async (args: Record<string, unknown>): Promise<{ args: A } | { problem: string }> => {
    if (standard === null) return { args: args as A }
    const result = await standard['~standard'].validate(args)
    return result.issues === undefined ? { args: result.value as A } : { problem: issueText(result.issues) }
  }
  const condition = options.needsApproval
  return defineTool({
    name: options.name,
    description: options.description,
    parameters,
    attribution: options.attribution ?? { provenance: 'native', source: 'embedded' },
    ...(options.risk === undefined ? {} : { risk: options.risk }),
    ...(condition === undefined
      ? {}
      : {
          needsApproval: typeof condition === 'boolean'
            ? condition
            : async (args: Record<string, unknown>, ctx: ApprovalCheckContext) => {
              const parsed = await parse(args)
              // Arguments the tool would refuse are refused at execution; nothing to ask about.
              return 'problem' in parsed ? false : await condition(parsed.args, ctx)
            }
        }),
    async execute (args, ctx) {
      const parsed = await parse(args)
      if ('problem' in parsed) return fail(`invalid arguments: ${parsed.problem}`)
      return resultOf(await options.execute(parsed.args, {
        turnId: ctx.turnId,
        sessionId: ctx.sessionId,
        callId: ctx.callId,
        tenant: ctx.tenant ?? 'local',
        signal: ctx.signal,
        progress: ctx.progress ?? (() => {}),
        // Made on first read (a child logger serialises its bindings at once).
        get log () { return ctx.log }
      }))
    }
  })
}
