/**
 * Renders a run as Markdown: the same text is printed and written to bench/results.md. Ratios
 * are the figures to compare across runs; absolute numbers depend on the machine and its load.
 */
import type { Knobs } from './knobs.js'
import type { Machine } from './machine.js'
import { fmt, ratio, type Summary } from './stats.js'

/** `transient`: the SQLite gateway with durable turns off (no checkpoints): what durability costs. */
export type RunnerKey = 'route' | 'loop' | 'sqlite' | 'transient' | 'memory' | 'peer'

export interface RunnerFigures {
  key: RunnerKey
  label: string
  turnsPerSec: number
  roundsPerSec: number[]
  latency: Summary
  errors: number
  firstError: string | null
  providerCallsPerTurn: number
  toolRunsPerTurn: number
  /** null where /proc could not be read. */
  cpuPerTurn: CpuPerTurn | null
}

/** CPU milliseconds per turn: the runner's process, its main thread, the fake provider, the HTTP load driver (null: none). */
export interface CpuPerTurn { runner: number, mainThread: number, provider: number, driver: number | null }

export interface ThroughputFigures {
  runners: RunnerFigures[]
}

export interface SqlPerTurn {
  statements: number
  commits: number
  /** Rows written to the event log. */
  events: number
}

export interface ToolCallPoint {
  calls: number
  latency: Summary
  errors: number
  providerCallsPerTurn: number
  toolRunsPerTurn: number
  /** SQLite runner only. */
  sql?: SqlPerTurn
}

export interface ToolCallRunner {
  key: RunnerKey
  label: string
  points: ToolCallPoint[]
}

export interface ToolCallFigures {
  runners: ToolCallRunner[]
}

export interface CancelFigures {
  idle: Summary
  loaded: Summary
  loadTurnsPerSec: number
  loadErrors: number
}

export interface FirstEventFigures {
  sse: Summary
  ws: Summary
}

export interface IdleFigures {
  requested: number
  heldByServer: number
  openAtClients: number
  failed: number
  firstError: string | null
  openSeconds: number
  rssDelta: number
  heapDelta: number
  externalDelta: number
}

export interface FanoutFigures {
  subscribers: number
  turns: number
  liveEventsPerTurn: number
  expectedSamples: number
  latency: Summary
}

/**
 * Streaming section, per load and runner. `tollgate-memory` is the same gateway on the memory
 * store: what Tollgate costs per delta with nothing stored, beside the default wiring.
 */
export type StreamRunnerKey = 'tollgate' | 'tollgate-memory' | 'relay' | 'ai-sdk'

export interface StreamPoint {
  /** Which load of the run (its position in the schedule) and which round it belongs to, from 0. */
  load: number
  round: number
  streams: number
  runner: StreamRunnerKey
  deltas: number
  expectedDeltas: number
  seconds: number
  latency: Summary
  errors: number
  /** CPU ms of the runner's process and of its main thread over the run; null where /proc is missing. */
  cpu: { process: number, mainThread: number } | null
  /** CPU ms of the fake provider and of the client process over the same run: a saturated client would show here. */
  providerCpu: number | null
  clientCpu: number | null
  /** Resident memory growth of the runner's process, mid-run over before the run, in bytes. */
  rssGrowth: number | null
}

export interface StreamingFigures {
  tokens: number
  intervalMs: number
  rounds: number
  points: StreamPoint[]
  /** SQLite file growth (database and WAL, after a graceful stop) over the answers stored; null if unread. */
  storedBytesPerAnswer: number | null
  answersStored: number
}

/** Parser section: one provider API read by one implementation, over every round. */
export type ParserApi = 'anthropic' | 'responses' | 'chat'
export type ParserImplKey = 'tollgate' | 'ai-sdk' | 'official'

export interface ParserPoint {
  api: ParserApi
  impl: ParserImplKey
  /** CPU ms per 1,000 deltas of each round, in round order. */
  cpuPerKiloDeltas: number[]
  deltas: number
  expectedDeltas: number
  errors: number
  firstError: string | null
}

export interface ParserFigures {
  textDeltas: number
  reasoningDeltas: number
  streams: number
  concurrency: number
  rounds: number
  points: ParserPoint[]
  /** Library versions read from their package.json, for the report. */
  versions: string
}

export interface Report {
  date: string
  machine: Machine
  versions: string
  knobs: Knobs
  loadBefore: string
  loadAfter: string
  throughput?: ThroughputFigures
  toolCalls?: ToolCallFigures
  cancel?: CancelFigures
  firstEvent?: FirstEventFigures
  idle?: IdleFigures
  fanout?: FanoutFigures
  streaming?: StreamingFigures
  parsers?: ParserFigures
  warnings: string[]
}

const KIB = 1024

function table (head: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n')
}

function runnerRow (r: RunnerFigures): string[] {
  return [
    r.label,
    `${fmt(r.turnsPerSec, 0)} (${r.roundsPerSec.map((v) => fmt(v, 0)).join(', ')})`,
    fmt(r.latency.p50),
    fmt(r.latency.p99),
    String(r.latency.count),
    String(r.errors),
    fmt(r.providerCallsPerTurn),
    fmt(r.toolRunsPerTurn)
  ]
}

function ratioRow (label: string, a: RunnerFigures, b: RunnerFigures): string[] {
  return [label, ratio(a.turnsPerSec, b.turnsPerSec), ratio(a.latency.p50, b.latency.p50), ratio(a.latency.p99, b.latency.p99)]
}

/** Least-squares slope of y over x. */
export function slope (points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length
  if (n < 2) return Number.NaN
  const mx = points.reduce((s, [x]) => s + x, 0) / n
  const my = points.reduce((s, [, y]) => s + y, 0) / n
  let num = 0
  let den = 0
  for (const [x, y] of points) {
    num += (x - mx) * (y - my)
    den += (x - mx) ** 2
  }
  return den === 0 ? Number.NaN : num / den
}

const SHORT: Record<RunnerKey, string> = {
  route: 'bare Fastify route',
  loop: 'bare loop',
  sqlite: 'Tollgate (SQLite)',
  transient: 'Tollgate (SQLite, not durable)',
  memory: 'Tollgate (memory)',
  peer: 'AI SDK peer'
}

function renderThroughput (t: ThroughputFigures, out: string[]): void {
  out.push('## Turn throughput and latency', '')
  out.push(table(
    ['runner', 'turns/s (per round)', 'p50 ms', 'p99 ms', 'turns timed', 'errors', 'provider calls/turn', 'tool runs/turn'],
    t.runners.map(runnerRow)
  ), '')
  const route = t.runners.find((r) => r.key === 'route')
  const peer = t.runners.find((r) => r.key === 'peer')
  const rows: string[][] = []
  for (const r of t.runners) {
    if (route !== undefined && r !== route) rows.push(ratioRow(`${SHORT[r.key]} / ${SHORT.route}`, r, route))
  }
  for (const r of t.runners) {
    if (peer !== undefined && (r.key === 'sqlite' || r.key === 'memory')) rows.push(ratioRow(`${SHORT[r.key]} / ${SHORT.peer}`, r, peer))
  }
  // What durable turns (their checkpoints) cost the default wiring.
  const sqlite = t.runners.find((r) => r.key === 'sqlite')
  const transient = t.runners.find((r) => r.key === 'transient')
  if (sqlite !== undefined && transient !== undefined) rows.push(ratioRow(`${SHORT.sqlite} / ${SHORT.transient}`, sqlite, transient))
  if (rows.length > 0) {
    out.push('Ratios, all from this run (turns/s below 1× and latency above 1× mean the first runner is slower):', '')
    out.push(table(['ratio', 'turns/s', 'p50', 'p99'], rows), '')
  }
  renderCpu(t, route, out)
}

function renderCpu (t: ThroughputFigures, route: RunnerFigures | undefined, out: string[]): void {
  const measured = t.runners.filter((r) => r.cpuPerTurn !== null)
  if (measured.length === 0) return
  const all = (c: CpuPerTurn): number => c.runner + c.provider + (c.driver ?? 0)
  out.push(
    'CPU per turn over the same runs (ms, from /proc, warm-up turns included). A runner runs its JavaScript on one ' +
    'thread, so 1000 / (main-thread ms per turn) is the most turns/s it can reach however many cores are free; the ' +
    'main-thread ceiling is the bare route\'s main-thread figure over the runner\'s, the turns/s ratio that bound allows. ' +
    'The all-CPU ceiling is the bare route\'s sum of the three processes over the runner\'s: the ratio the runner could ' +
    'reach if its work spread over every core and the machine\'s CPU were the only limit:', ''
  )
  const routeCpu = route?.cpuPerTurn ?? null
  out.push(table(
    ['runner', 'runner process', 'of it main thread', 'fake provider', 'HTTP load driver', 'all three', 'main-thread ceiling vs route', 'all-CPU ceiling vs route'],
    measured.map((r) => {
      const c = r.cpuPerTurn as CpuPerTurn
      return [
        `CPU of ${SHORT[r.key]}`, fmt(c.runner, 3), fmt(c.mainThread, 3), fmt(c.provider, 3), c.driver === null ? '(drives itself)' : fmt(c.driver, 3),
        fmt(all(c), 3), routeCpu === null ? '' : ratio(routeCpu.mainThread, c.mainThread), routeCpu === null ? '' : ratio(all(routeCpu), all(c))
      ]
    })
  ), '')
}

function renderToolCalls (f: ToolCallFigures, out: string[]): void {
  out.push('## Cost per tool call (concurrency 1)', '')
  const route = f.runners.find((r) => r.key === 'route')
  const baseAt = (calls: number): ToolCallPoint | undefined => route?.points.find((p) => p.calls === calls)
  const rows: string[][] = []
  for (const r of f.runners) {
    for (const p of r.points) {
      const base = baseAt(p.calls)
      const above = (v: number, b: number | undefined): string => (r === route || b === undefined ? '' : fmt(v - b))
      rows.push([
        r.label, String(p.calls), String(p.latency.count), fmt(p.latency.p50), fmt(p.latency.p99),
        above(p.latency.p50, base?.latency.p50), above(p.latency.p99, base?.latency.p99),
        p.sql === undefined ? '' : fmt(p.sql.events, 1), p.sql === undefined ? '' : fmt(p.sql.statements, 1), p.sql === undefined ? '' : fmt(p.sql.commits, 1),
        String(p.errors), `${fmt(p.providerCallsPerTurn)} / ${fmt(p.toolRunsPerTurn)}`
      ])
    }
  }
  out.push(table(
    ['runner', 'tool calls', 'turns timed', 'p50 ms', 'p99 ms', 'p50 − route ms', 'p99 − route ms', 'events written/turn', 'SQL statements/turn', 'commits/turn', 'errors', 'provider calls / tool runs per turn'],
    rows
  ), '')
  if (route === undefined) return
  const slopes: string[][] = []
  for (const r of f.runners) {
    if (r === route) continue
    const over = (pick: (s: Summary) => number): Array<[number, number]> => r.points.flatMap((p) => {
      const base = baseAt(p.calls)
      return base === undefined ? [] : [[p.calls, pick(p.latency) - pick(base.latency)] as [number, number]]
    })
    const at2 = r.points.find((p) => p.calls === 2)
    const base2 = baseAt(2)
    slopes.push([
      SHORT[r.key],
      fmt(slope(over((s) => s.p50)), 3),
      fmt(slope(over((s) => s.p99)), 3),
      at2 === undefined || base2 === undefined ? 'n/a' : fmt(at2.latency.p99 - base2.latency.p99)
    ])
  }
  out.push('Added per tool call: least-squares slope, over the tool-call counts, of the latency minus the bare route\'s at the same count:', '')
  out.push(table(['runner', 'ms per tool call (p50)', 'ms per tool call (p99)', 'p99 above the route at 2 calls, ms'], slopes), '')
  out.push('Per turn, from the SQLite store\'s SQL probe: events written = rows inserted into the event log; SQL statements = every statement SQLite ran (BEGIN and COMMIT included); commits = write transactions (explicit COMMITs and writes outside a transaction).', '')
}

function renderCancel (c: CancelFigures, out: string[]): void {
  out.push('## Cancel → terminal event (Tollgate, SQLite)', '')
  out.push(table(['condition', 'samples', 'p50 ms', 'p99 ms'], [
    ['idle', String(c.idle.count), fmt(c.idle.p50), fmt(c.idle.p99)],
    [`under load: concurrency-16 closed loop of turns (${fmt(c.loadTurnsPerSec, 0)} turns/s, ${c.loadErrors} errors)`, String(c.loaded.count), fmt(c.loaded.p50), fmt(c.loaded.p99)]
  ]), '')
  out.push('From sending a WS `cancel` for a turn whose model call is under way to receiving its `turn.cancelled` event frame, one turn at a time.', '')
}

export function renderReport (report: Report): string {
  const { machine: m, knobs: k } = report
  const out: string[] = []
  out.push('# Tollgate benchmark results', '')
  out.push(`Run ${report.date} with \`npm run bench\`. Compare the **ratios**: every figure of a run comes from the same machine at the same time, absolute numbers move with the machine's load.`, '')
  out.push('## Machine', '')
  out.push(table(['', ''], [
    ['os', m.os],
    ['cpu', m.cpu],
    ['cores', String(m.cores)],
    ['memory', `${fmt(m.memoryGiB, 1)} GiB (${fmt(m.freeGiB, 1)} GiB free at start)`],
    ['node', m.node],
    ['code', report.versions],
    ['open files per process', String(m.openFiles)],
    ['load average (1, 5, 15 min) at start', report.loadBefore],
    ['load average (1, 5, 15 min) at end', report.loadAfter]
  ]), '')
  out.push('## Settings', '')
  out.push(`Workload: each turn is a provider call answered with 2 tool calls (two no-op tools; 0, 2, 4 or 8 in the tool-call section), then a provider call answered with the final text; the fake provider answers with zero latency from its own process (${k.stream ? 'SSE streaming' : 'JSON, not streamed'}). Throughput: concurrency ${k.concurrency}, ${k.rounds} round(s) of ${k.durationMs} ms per runner after ${k.warmupMs} ms warm-up each, runners interleaved and rotated every round. Tool calls: concurrency 1, ${k.toolCallsMs} ms per runner and count after ${k.warmupMs} ms warm-up. Tollgate runs with its default wiring: every event persisted in the embedded SQLite store (the memory-store row persists nothing).`, '')

  if (report.throughput !== undefined) renderThroughput(report.throughput, out)
  if (report.toolCalls !== undefined) renderToolCalls(report.toolCalls, out)
  if (report.cancel !== undefined) renderCancel(report.cancel, out)

  const f = report.firstEvent
  if (f !== undefined) {
    out.push('## Time from starting a turn to its first event', '')
    out.push(table(['path', 'samples', 'p50 ms', 'p99 ms'], [
      ['POST /v1/turns (Accept: text/event-stream) → first SSE event', String(f.sse.count), fmt(f.sse.p50), fmt(f.sse.p99)],
      ['WS turn.start → first event frame', String(f.ws.count), fmt(f.ws.p50), fmt(f.ws.p99)]
    ]), '')
  }

  const i = report.idle
  if (i !== undefined) {
    out.push('## Idle WebSocket connections', '')
    out.push(table(
      ['requested', 'held by the server', 'open at the clients', 'failed', 'open time s', 'RSS / connection', 'heap / connection', 'external / connection', 'RSS delta'],
      [[
        String(i.requested), String(i.heldByServer), String(i.openAtClients), String(i.failed), fmt(i.openSeconds, 1),
        `${fmt(i.rssDelta / i.heldByServer / KIB, 1)} KiB`, `${fmt(i.heapDelta / i.heldByServer / KIB, 1)} KiB`,
        `${fmt(i.externalDelta / i.heldByServer / KIB, 1)} KiB`, `${fmt(i.rssDelta / KIB / KIB, 1)} MiB`
      ]]
    ), '')
    out.push(`Memory is the gateway process's, after a full GC, with ${k.idleProcesses} client process(es) holding the sockets (each said hello and got its welcome).`, '')
  }

  const fo = report.fanout
  if (fo !== undefined) {
    out.push('## Fan-out of one turn\'s events', '')
    out.push(table(['subscribers', 'turns', 'live events/turn', 'samples (expected)', 'p50 ms', 'p99 ms'], [[
      String(fo.subscribers), String(fo.turns), fmt(fo.liveEventsPerTurn, 1), `${fo.latency.count} (${fo.expectedSamples})`, fmt(fo.latency.p50), fmt(fo.latency.p99)
    ]]), '')
    out.push(`Latency per subscriber and event: receipt in the subscriber process minus the moment the gateway handed the event to its bus, both on the machine's monotonic clock; ${k.fanoutProcesses} subscriber process(es).`, '')
  }

  const st = report.streaming
  if (st !== undefined) renderStreaming(out, st)
  if (report.parsers !== undefined) renderParsers(out, report.parsers)

  if (report.warnings.length > 0) {
    out.push('## Warnings', '')
    for (const w of report.warnings) out.push(`- ${w}`)
    out.push('')
  }
  return out.join('\n')
}

const STREAM_LABELS: Record<StreamRunnerKey, string> = {
  tollgate: 'Tollgate, SQLite (default)',
  'tollgate-memory': 'Tollgate, memory store (no event log)',
  relay: 'bare Fastify SSE relay',
  'ai-sdk': 'Fastify + AI SDK streamText'
}

/** CPU ms of the runner's process per 1,000 delivered deltas. */
function cpuPerKilo (p: StreamPoint): number {
  return p.cpu === null || p.deltas === 0 ? Number.NaN : p.cpu.process / (p.deltas / 1000)
}

function perKilo (ms: number | null, deltas: number): string {
  return ms === null || deltas === 0 ? 'n/a' : fmt(ms / (deltas / 1000), 1)
}

/** The median of a non-empty list (the mean of the middle two for an even count). */
function median (values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] as number : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

/**
 * A ratio over several loads: its median, with the lowest and highest when there is more than
 * one (a single load's figure moves with the machine; the median of interleaved loads far less).
 */
export function ratioOverLoads (ratios: readonly number[]): string {
  const finite = ratios.filter(Number.isFinite)
  if (finite.length === 0) return 'n/a'
  const m = `${median(finite).toFixed(2)}×`
  if (finite.length === 1) return m
  return `${m} (${Math.min(...finite).toFixed(2)}–${Math.max(...finite).toFixed(2)}×)`
}

function renderStreaming (out: string[], st: StreamingFigures): void {
  out.push('## Streaming', '')
  out.push(table(
    [
      'round', 'streams', 'runner', 'deltas (expected)', 'deltas/s', 'latency p50 ms', 'latency p99 ms', 'CPU ms / 1,000 deltas (main thread)',
      'provider / client CPU ms / 1,000 deltas', 'RSS / in-flight stream', 'errors'
    ],
    st.points.map((p) => [
      String(p.round + 1), String(p.streams), STREAM_LABELS[p.runner], `${p.deltas} (${p.expectedDeltas})`, fmt(p.deltas / p.seconds, 0),
      fmt(p.latency.p50), fmt(p.latency.p99),
      `${fmt(cpuPerKilo(p), 1)} (${p.cpu === null || p.deltas === 0 ? 'n/a' : fmt(p.cpu.mainThread / (p.deltas / 1000), 1)})`,
      `${perKilo(p.providerCpu, p.deltas)} / ${perKilo(p.clientCpu, p.deltas)}`,
      p.rssGrowth === null ? 'n/a' : `${fmt(p.rssGrowth / p.streams / KIB, 1)} KiB`,
      String(p.errors)
    ])
  ), '')
  const streamCounts = [...new Set(st.points.map((p) => p.streams))]
  const rows: string[][] = []
  // The default wiring against both peers; then the memory store against the relay and the
  // default wiring against the memory store: how much of the gap storing costs.
  const pairs: ReadonlyArray<readonly [StreamRunnerKey, StreamRunnerKey, string]> = [
    ['tollgate', 'relay', `Tollgate / ${STREAM_LABELS.relay}`],
    ['tollgate', 'ai-sdk', `Tollgate / ${STREAM_LABELS['ai-sdk']}`],
    ['tollgate-memory', 'relay', `Tollgate, memory store / ${STREAM_LABELS.relay}`],
    ['tollgate', 'tollgate-memory', 'Tollgate, SQLite / Tollgate, memory store']
  ]
  for (const streams of streamCounts) {
    // Each load pairs its own runners' figures: a ratio is never taken across loads.
    const loads = [...new Set(st.points.filter((p) => p.streams === streams).map((p) => p.load))]
    for (const [mine, other, label] of pairs) {
      const paired = loads.flatMap((load) => {
        const m = st.points.find((p) => p.load === load && p.runner === mine)
        const o = st.points.find((p) => p.load === load && p.runner === other)
        return m === undefined || o === undefined ? [] : [[m, o] as const]
      })
      if (paired.length === 0) continue
      rows.push([
        `${streams} streams: ${label}`, String(paired.length),
        ratioOverLoads(paired.map(([m, o]) => cpuPerKilo(m) / cpuPerKilo(o))),
        ratioOverLoads(paired.map(([m, o]) => m.latency.p50 / o.latency.p50)),
        ratioOverLoads(paired.map(([m, o]) => m.latency.p99 / o.latency.p99))
      ])
    }
  }
  out.push(table(['ratio', 'loads', 'CPU / delta', 'latency p50', 'latency p99'], rows), '')
  const p99s = streamCounts.map((streams) => {
    const of = (runner: StreamRunnerKey): string => {
      const values = st.points.filter((p) => p.streams === streams && p.runner === runner).map((p) => p.latency.p99).filter(Number.isFinite)
      return values.length === 0 ? 'n/a' : `${fmt(median(values))} ms`
    }
    return [`${streams}`, of('tollgate'), of('tollgate-memory'), of('relay'), of('ai-sdk')]
  })
  out.push(
    `Ratios: the median over the loads of that size (one per round), each load's runners against each other, with the lowest and highest in brackets. ${st.rounds} round(s); latency p99, median over the loads:`, ''
  )
  out.push(table(['streams', STREAM_LABELS.tollgate, STREAM_LABELS['tollgate-memory'], STREAM_LABELS.relay, STREAM_LABELS['ai-sdk']], p99s), '')
  out.push(
    `Stored by Tollgate per answer (SQLite database and WAL growth after a graceful stop, over ${st.answersStored} answers): ` +
    `${st.storedBytesPerAnswer === null ? 'n/a' : `${fmt(st.storedBytesPerAnswer / KIB, 1)} KiB`}; the memory store, the relay and the AI SDK route store nothing.`, ''
  )
  out.push(
    `Each stream is one answer of ${st.tokens} tokens, one every ${st.intervalMs} ms from the fake provider; all streams of a load start at once. ` +
    'Latency: receipt in the client process minus the provider\'s send time carried in the token, both CLOCK_MONOTONIC. ' +
    'CPU is the runner\'s process (all threads) from /proc, for Tollgate up to the compaction of the batch\'s finished turns; RSS per stream is its resident memory mid-run minus before the run, over the streams in flight.', ''
  )
}

const PARSER_API_LABELS: Record<ParserApi, string> = {
  anthropic: 'Anthropic Messages',
  responses: 'OpenAI Responses',
  chat: 'chat completions'
}

const PARSER_IMPL_LABELS: Record<ParserImplKey, string> = {
  tollgate: 'Tollgate provider (undici, hand-written)',
  'ai-sdk': 'AI SDK provider `doStream`',
  official: 'official client, streaming helper'
}

function lowest (values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : Math.min(...values)
}

function renderParsers (out: string[], pf: ParserFigures): void {
  out.push('## Reading a streamed answer, per provider API', '')
  out.push(table(
    ['API', 'implementation', 'CPU ms / 1,000 deltas (best round)', 'every round', 'deltas (expected)', 'errors', 'vs Tollgate'],
    pf.points.map((p) => {
      const own = pf.points.find((q) => q.api === p.api && q.impl === 'tollgate')
      return [
        PARSER_API_LABELS[p.api], PARSER_IMPL_LABELS[p.impl], fmt(lowest(p.cpuPerKiloDeltas), 1),
        p.cpuPerKiloDeltas.map((v) => fmt(v, 1)).join(' / '), `${p.deltas} (${p.expectedDeltas})`,
        p.errors === 0 ? '0' : `${p.errors}: ${p.firstError ?? ''}`,
        own === undefined ? 'n/a' : ratio(lowest(p.cpuPerKiloDeltas), lowest(own.cpuPerKiloDeltas))
      ]
    })
  ), '')
  out.push(
    `Each answer: ${pf.reasoningDeltas} reasoning deltas, ${pf.textDeltas} text deltas and one tool call whose arguments arrive in 5-character pieces, ` +
    `in each API's own event sequence; ${pf.streams} answers per implementation and round, ${pf.concurrency} at a time, ${pf.rounds} round(s), implementations rotated every round, ` +
    'each in its own process reading from one zero-latency server that writes one SSE frame per write. CPU is the reader process\'s own (process.cpuUsage, all threads) ' +
    'over the answers read, HTTP client included; a delta is a text or reasoning piece handed to the caller. Every answer is checked (text, reasoning, tool name and arguments); ' +
    `a wrong one counts as an error. ${pf.versions}.`, ''
  )
}
