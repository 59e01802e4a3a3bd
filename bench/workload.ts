/**
 * The one workload every runner executes, so their figures compare: a turn is a provider call
 * answered with tool calls (two unless the message asks for another count), the no-op tools,
 * and a second provider call answered with the final text (a turn with no tool calls is one
 * provider call). The fake provider decides from the request alone (see fake-provider-server.ts),
 * so Tollgate, the bare baselines and the AI SDK peer all send and receive the same exchanges.
 */

export const MODEL = 'bench-model'
export const SYSTEM_PROMPT = 'You are a benchmark agent. Call the tools you are given, then answer.'
/** A turn message asking for `calls` tool calls (`calls:<n> …`); without the prefix it is two. */
export function turnMessage (calls: number): string {
  return `calls:${calls} Run the no-op tools, then answer.`
}
export const TURN_MESSAGE = turnMessage(2)
const CALLS_PREFIX = /^calls:(\d+) /
export const DEFAULT_CALLS = 2
/** Upper bound on tool calls a message may ask for. */
export const MAX_CALLS = 64
export const FINAL_TEXT = 'done'
/** A turn whose first provider call waits until the orchestrator releases it (fan-out set-up). */
export const HOLD_PREFIX = 'hold:'
/** Bound on model round trips per turn in every runner: the workload needs two at most. */
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

export interface ScriptedCall { name: string, arguments: { n: number } }

/**
 * What the fake provider asks for on a turn's first call: `count` calls, the first half of
 * noop_a and the rest of noop_b, each with its own `n`. Arguments differ, so the duplicate-call
 * guard never fires, and the tools do not alternate, so the loop detector's ping-pong rule
 * (four a/b cycles) never nudges: every runner does the same work.
 */
export function scriptedCalls (count: number): ScriptedCall[] {
  const half = Math.ceil(count / 2)
  return Array.from({ length: count }, (_, i) => ({ name: i < half ? 'noop_a' : 'noop_b', arguments: { n: i + 1 } }))
}

/** The tool calls a turn message asks for (DEFAULT_CALLS without the prefix, at most MAX_CALLS). */
export function callsAskedBy (message: string): number {
  const m = CALLS_PREFIX.exec(message)
  return m === null ? DEFAULT_CALLS : Math.min(MAX_CALLS, Number(m[1]))
}

/**
 * Streaming section: a user message `stream:<tokens>:<intervalMs> <id>` makes the fake provider
 * stream `tokens` content chunks, one every `intervalMs`, then finish. Every runner sends the
 * same message, so the provider does the same work for each.
 */
export const STREAM_PREFIX = 'stream:'
const STREAM_ASK = /^stream:(\d+):(\d+) /
export function streamMessage (tokens: number, intervalMs: number, id: string): string {
  return `${STREAM_PREFIX}${tokens}:${intervalMs} ${id}`
}
export function streamAskedBy (message: string): { tokens: number, intervalMs: number } | null {
  const m = STREAM_ASK.exec(message)
  return m === null ? null : { tokens: Number(m[1]), intervalMs: Number(m[2]) }
}

/**
 * Each streamed token is the provider's send time, on the machine's monotonic clock in
 * microseconds, written as SEND_TIME_LETTERS lowercase letters (base 26) and a space: a plain
 * word, which no runner's text handling (Tollgate's secret scrubber included) has a reason to
 * alter, and which the client turns back into a send time whatever pieces the text arrives in.
 * Nine letters hold 26^9 µs, about 62 days of uptime.
 */
export const SEND_TIME_LETTERS = 9
const A = 'a'.charCodeAt(0)
export function encodeSendTime (ns: bigint): string {
  let us = ns / 1000n
  let word = ''
  for (let i = 0; i < SEND_TIME_LETTERS; i++) {
    word = String.fromCharCode(A + Number(us % 26n)) + word
    us /= 26n
  }
  return `${word} `
}
/** The send time in ns of one token (without its space); null when it is not one. */
export function decodeSendTime (word: string): bigint | null {
  if (word.length !== SEND_TIME_LETTERS) return null
  let us = 0n
  for (let i = 0; i < word.length; i++) {
    const digit = word.charCodeAt(i) - A
    if (digit < 0 || digit >= 26) return null
    us = us * 26n + BigInt(digit)
  }
  return us * 1000n
}
