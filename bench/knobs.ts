/**
 * The bench's settings, from BENCH_* environment variables, each bounded: a bad value stops the
 * run with a message naming the variable instead of producing a meaningless table.
 */

export type Section = 'throughput' | 'tool-calls' | 'cancel' | 'first-event' | 'idle' | 'fanout' | 'streaming' | 'parsers'
export const SECTIONS: readonly Section[] = ['throughput', 'tool-calls', 'cancel', 'first-event', 'idle', 'fanout', 'streaming', 'parsers']

export interface Knobs {
  concurrency: number
  warmupMs: number
  durationMs: number
  rounds: number
  /** Measured time per runner and tool-call count in the tool-calls section. */
  toolCallsMs: number
  cancelSamples: number
  /** Length of the concurrency-16 load during which cancels are sampled again. */
  cancelLoadMs: number
  stream: boolean
  idleConnections: number
  idleProcesses: number
  fanoutSubscribers: number
  fanoutProcesses: number
  fanoutTurns: number
  firstEventSamples: number
  /** Streaming section: the concurrent-stream counts measured, one load after another. */
  streamLoads: number[]
  /**
   * Times the whole list of loads is run, one round after another: a single load's CPU ratio
   * moves ±25% with the machine, so the ratios are read as medians over the rounds.
   */
  streamRounds: number
  /** Tokens per streamed answer and the provider's interval between them. */
  streamTokens: number
  streamIntervalMs: number
  /** Parser section: answers read per implementation and round, how many at a time, the rounds, and text deltas per answer. */
  parserStreams: number
  parserConcurrency: number
  parserRounds: number
  parserTextDeltas: number
  sections: ReadonlySet<Section>
  /** Where to write the Markdown report; empty: do not write one. */
  resultsPath: string
  verbose: boolean
}

export class KnobError extends Error {}

/** An integer setting from `env[name]` (unset or empty: `fallback`), checked against its bounds. */
export function int (env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) throw new KnobError(`${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(raw)}`)
  return value
}

/** A comma-separated list of integers, each within bounds. */
function ints (env: NodeJS.ProcessEnv, name: string, fallback: number[], min: number, max: number): number[] {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const values = raw.split(',').map((s) => s.trim())
  if (values.some((v) => !Number.isInteger(Number(v)) || v === '' || Number(v) < min || Number(v) > max)) {
    throw new KnobError(`${name} must list integers from ${min} to ${max}, comma-separated, not ${JSON.stringify(raw)}`)
  }
  return values.map(Number)
}

function flag (env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = env[name]
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false
  if (raw === '1' || raw === 'true') return true
  throw new KnobError(`${name} must be 0 or 1, not ${JSON.stringify(raw)}`)
}

function sections (env: NodeJS.ProcessEnv): ReadonlySet<Section> {
  const raw = env.BENCH_ONLY
  if (raw === undefined || raw === '') return new Set(SECTIONS)
  const picked = raw.split(',').map((s) => s.trim()).filter((s) => s !== '')
  for (const s of picked) {
    if (!(SECTIONS as readonly string[]).includes(s)) throw new KnobError(`BENCH_ONLY lists unknown section ${JSON.stringify(s)}; known: ${SECTIONS.join(', ')}`)
  }
  return new Set(picked as Section[])
}

/** `openFiles` is this process's open-file limit, which the bench processes inherit. */
export function readKnobs (env: NodeJS.ProcessEnv, openFiles: number, defaultResults: string): Knobs {
  // The gateway holds every idle connection, so its limit is the binding one (each client
  // process holds only its share); the headroom covers its other files and sockets.
  const headroom = 500
  return {
    concurrency: int(env, 'BENCH_CONCURRENCY', 16, 1, 256),
    warmupMs: int(env, 'BENCH_WARMUP_MS', 2000, 0, 60_000),
    durationMs: int(env, 'BENCH_DURATION_MS', 4000, 100, 600_000),
    rounds: int(env, 'BENCH_ROUNDS', 3, 1, 20),
    toolCallsMs: int(env, 'BENCH_TOOL_CALLS_MS', 3000, 100, 600_000),
    cancelSamples: int(env, 'BENCH_CANCEL_SAMPLES', 200, 1, 10_000),
    cancelLoadMs: int(env, 'BENCH_CANCEL_LOAD_MS', 8000, 2000, 600_000),
    stream: flag(env, 'BENCH_PROVIDER_STREAM'),
    idleConnections: int(env, 'BENCH_IDLE_CONNECTIONS', 10_000, 1, Math.max(1, openFiles - headroom)),
    idleProcesses: int(env, 'BENCH_IDLE_PROCESSES', 4, 1, 32),
    fanoutSubscribers: int(env, 'BENCH_FANOUT_SUBSCRIBERS', 1000, 1, 5000),
    fanoutProcesses: int(env, 'BENCH_FANOUT_PROCESSES', 4, 1, 32),
    fanoutTurns: int(env, 'BENCH_FANOUT_TURNS', 5, 1, 100),
    firstEventSamples: int(env, 'BENCH_FIRST_EVENT_SAMPLES', 200, 1, 10_000),
    streamLoads: ints(env, 'BENCH_STREAMS', [50, 100, 200], 1, 2000),
    streamRounds: int(env, 'BENCH_STREAM_ROUNDS', 3, 1, 20),
    streamTokens: int(env, 'BENCH_STREAM_TOKENS', 200, 1, 10_000),
    streamIntervalMs: int(env, 'BENCH_STREAM_INTERVAL_MS', 20, 1, 10_000),
    parserStreams: int(env, 'BENCH_PARSER_STREAMS', 400, 1, 100_000),
    parserConcurrency: int(env, 'BENCH_PARSER_CONCURRENCY', 8, 1, 256),
    parserRounds: int(env, 'BENCH_PARSER_ROUNDS', 3, 1, 20),
    parserTextDeltas: int(env, 'BENCH_PARSER_TEXT_DELTAS', 200, 1, 10_000),
    sections: sections(env),
    resultsPath: env.BENCH_RESULTS ?? defaultResults,
    verbose: flag(env, 'BENCH_VERBOSE')
  }
}
