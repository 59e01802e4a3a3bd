/**
 * Renders a run as Markdown: the same text is printed and written to bench/results.md. Ratios
 * are the figures to compare across runs; absolute numbers depend on the machine and its load.
 */
import type { Knobs } from './knobs.js'
import type { Machine } from './machine.js'
import { fmt, ratio, type Summary } from './stats.js'

export interface RunnerFigures {
  label: string
  turnsPerSec: number
  roundsPerSec: number[]
  latency: Summary
  errors: number
  firstError: string | null
  providerCallsPerTurn: number
  toolRunsPerTurn: number
}

export interface ThroughputFigures {
  baseline: RunnerFigures
  tollgate: RunnerFigures
  peer: RunnerFigures
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

export interface Report {
  date: string
  machine: Machine
  versions: string
  knobs: Knobs
  loadBefore: string
  loadAfter: string
  throughput?: ThroughputFigures
  firstEvent?: FirstEventFigures
  idle?: IdleFigures
  fanout?: FanoutFigures
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
  out.push(`Workload: each turn is a provider call answered with 2 tool calls (two no-op tools), then a provider call answered with the final text; the fake provider answers with zero latency from its own process (${k.stream ? 'SSE streaming' : 'JSON, not streamed'}). Concurrency ${k.concurrency}, ${k.rounds} round(s) of ${k.durationMs} ms per runner after ${k.warmupMs} ms warm-up each, runners interleaved and rotated every round.`, '')

  const t = report.throughput
  if (t !== undefined) {
    out.push('## Turn throughput and latency', '')
    out.push(table(
      ['runner', 'turns/s (per round)', 'p50 ms', 'p99 ms', 'turns timed', 'errors', 'provider calls/turn', 'tool runs/turn'],
      [runnerRow(t.baseline), runnerRow(t.tollgate), runnerRow(t.peer)]
    ), '')
    out.push('Ratios (turns/s below 1× and latency above 1× mean Tollgate is slower):', '')
    out.push(table(['ratio', 'turns/s', 'p50', 'p99'], [
      ratioRow('Tollgate / baseline', t.tollgate, t.baseline),
      ratioRow('Tollgate / AI SDK peer', t.tollgate, t.peer)
    ]), '')
  }

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

  if (report.warnings.length > 0) {
    out.push('## Warnings', '')
    for (const w of report.warnings) out.push(`- ${w}`)
    out.push('')
  }
  return out.join('\n')
}
