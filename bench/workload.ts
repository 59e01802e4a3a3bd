/**
 * The one workload every runner executes, so their figures compare: a turn is a provider call
 * answered with two tool calls, the two no-op tools, and a second provider call answered with the
 * final text. The fake provider decides from the request alone (see fake-provider-server.ts), so
 * Tollgate, the bare baseline and the AI SDK peer all send and receive the same exchanges.
 */

export const MODEL = 'bench-model'
export const SYSTEM_PROMPT = 'You are a benchmark agent. Call the tools you are given, then answer.'
export const TURN_MESSAGE = 'Run the two no-op tools, then answer.'
export const FINAL_TEXT = 'done'
/** A turn whose first provider call waits until the orchestrator releases it (fan-out set-up). */
export const HOLD_PREFIX = 'hold:'
/** Bound on model round trips per turn in every runner: the workload needs two. */
export const MAX_STEPS = 4

export interface NoopTool {
  name: string
  description: string
  parameters: Record<string, unknown>
  /** The tool's work: nothing but formatting its answer. */
  run (args: { n: number }): string
}

const parameters = {
  type: 'object',
  properties: { n: { type: 'integer', minimum: 0 } },
  required: ['n'],
  additionalProperties: false
}

export const NOOP_TOOLS: readonly NoopTool[] = [
  { name: 'noop_a', description: 'Benchmark no-op tool A: returns at once.', parameters, run: ({ n }) => `a${n}` },
  { name: 'noop_b', description: 'Benchmark no-op tool B: returns at once.', parameters, run: ({ n }) => `b${n}` }
]

/** What the fake provider asks for on a turn's first call: one call of each no-op tool. */
export const SCRIPTED_CALLS: ReadonlyArray<{ name: string, arguments: { n: number } }> = [
  { name: 'noop_a', arguments: { n: 1 } },
  { name: 'noop_b', arguments: { n: 2 } }
]
