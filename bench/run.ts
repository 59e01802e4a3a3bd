/**
 * `npm run bench`: runs every section against separate processes (fake provider, gateways, load
 * clients, baselines, AI SDK peer), prints the report with its ratios and writes it to
 * bench/results.md. Every child process is ended before it exits, on success or failure.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ChildGroup, COMPILED, ROOT, type Child } from './children.js'
import type { LoopResult } from './closed-loop.js'
import { cpuSample, cpuSince, type CpuSample } from './cpu.js'
import { monotonicNs } from './ipc.js'
import { KnobError, readKnobs, type Knobs } from './knobs.js'
import { describeMachine, describeVersions, loadAverage } from './machine.js'
import {
  renderReport, type CancelFigures, type FanoutFigures, type FirstEventFigures, type IdleFigures, type Report, type RunnerFigures,
  type CpuPerTurn, type RunnerKey,
  type SqlPerTurn, type ThroughputFigures, type ToolCallFigures, type ToolCallPoint,
  type StreamingFigures, type ParserApi, type ParserFigures, type ParserImplKey, type ParserPoint, type StreamPoint, type StreamRunnerKey
} from './report.js'
import { readFileSync } from 'node:fs'
import type { SqlCounts } from '../src/store/sql-probe.js'
import { summarize } from './stats.js'
import { HOLD_PREFIX, streamMessage, TURN_MESSAGE, turnMessage } from './workload.js'

const CONNECT_IN_FLIGHT = 64
const PRIME_TURNS = 1000
/** Unmeasured turns per path of the first-event section, after priming: that path's own code warms up. */
const FIRST_EVENT_WARMUP = 200

interface Ctx {
  knobs: Knobs
  group: ChildGroup
  provider: Child
  providerUrl: string
  warnings: string[]
  log: (line: string) => void
}

function split (total: number, parts: number): number[] {
  const n = Math.min(parts, total)
  return Array.from({ length: n }, (_, i) => Math.floor(total / n) + (i < total % n ? 1 : 0))
}

type StoreKind = 'sqlite' | 'memory'

/**
 * `probe`: count SQL work (a few microseconds per statement: only where counts are reported).
 * `durable: false` (SQLite only): `shutdown.running_turns = "cancel"`, so no turn is checkpointed.
 */
async function startGateway (ctx: Ctx, store: StoreKind = 'sqlite', probe = false, durable = true): Promise<{ gateway: Child, url: string }> {
  const name = `tollgate${store === 'sqlite' ? '' : '-memory'}${durable || store === 'memory' ? '' : '-not-durable'}${probe ? '-probed' : ''}`
  const { child, ready } = await ctx.group.spawn(name, 'gateway-server.ts', {
    options: { providerUrl: ctx.providerUrl, stream: ctx.knobs.stream, store, probe, durable },
    execArgv: ['--expose-gc']
  })
  return { gateway: child, url: String(ready.url) }
}

async function stopChild (child: Child): Promise<void> {
  await child.request({ type: 'close' }).catch(() => {})
  await child.stop()
}

async function providerRequests (ctx: Ctx): Promise<number> {
  return (await ctx.provider.request<{ requests: number }>({ type: 'stats' })).requests
}

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

interface Loop { concurrency: number, warmupMs: number, durationMs: number, message: string }

interface Runner {
  key: RunnerKey
  label: string
  /** The process that serves the turns (for the bare loop, the one that also drives them). */
  pid: number
  /** The HTTP load process that drives it; null for the bare loop, which drives itself. */
  driver: Child | null
  run: (loop: Loop) => Promise<LoopResult>
  toolRuns: () => Promise<number>
  /** The SQLite gateway's SQL probe. */
  sql?: () => Promise<SqlCounts>
  stop: () => Promise<void>
}

const LABELS: Record<RunnerKey, string> = {
  route: 'baseline: bare Fastify route POST /turn (undici + direct tool calls)',
  loop: 'extra: bare loop, no HTTP hop (undici + direct tool calls)',
  sqlite: 'Tollgate, SQLite store (default): POST /v1/turns?wait=true',
  transient: 'Tollgate on SQLite with turns not durable (shutdown.running_turns = "cancel"): POST /v1/turns?wait=true',
  memory: 'Tollgate, memory store: POST /v1/turns?wait=true',
  peer: 'peer: Fastify route + AI SDK'
}

/** Starts the runners named by `keys`; `load` drives every HTTP runner; `probe` counts SQL on the SQLite gateway. */
async function startRunners (ctx: Ctx, keys: readonly RunnerKey[], load: Child, probe = false): Promise<Runner[]> {
  const { knobs } = ctx
  const options = { providerUrl: ctx.providerUrl, stream: knobs.stream }
  const timeoutFor = (loop: Loop): number => loop.warmupMs + loop.durationMs + 60_000
  const runs = async (child: Child): Promise<number> => (await child.request<{ runs: number }>({ type: 'tools' })).runs
  const http = (
    key: RunnerKey, server: Child, url: string, body: (message: string) => Record<string, unknown>,
    sql?: () => Promise<SqlCounts>
  ): Runner => ({
    key,
    label: key === 'peer' ? `${LABELS.peer} ${knobs.stream ? 'streamText' : 'generateText'}` : LABELS[key],
    pid: server.proc.pid as number,
    driver: load,
    run: async (loop) => {
      const { message, ...closedLoop } = loop
      return await load.request<LoopResult>({ type: 'run', ...closedLoop, url, body: body(message) }, timeoutFor(loop))
    },
    toolRuns: async () => await runs(server),
    ...(sql === undefined ? {} : { sql }),
    stop: async () => { await stopChild(server) }
  })
  return await Promise.all(keys.map(async (key): Promise<Runner> => {
    switch (key) {
      case 'route': {
        const { child, ready } = await ctx.group.spawn('route', 'baseline-fastify.ts', { options })
        return http(key, child, `${String(ready.url)}/turn`, (message) => ({ message }))
      }
      case 'loop': {
        const { child } = await ctx.group.spawn('loop', 'baseline-undici.ts', { options })
        return {
          key,
          label: LABELS.loop,
          pid: child.proc.pid as number,
          driver: null,
          run: async (loop) => await child.request<LoopResult>({ type: 'run', ...loop }, timeoutFor(loop)),
          toolRuns: async () => await runs(child),
          stop: async () => { await child.stop() }
        }
      }
      case 'sqlite':
      case 'transient':
      case 'memory': {
        const probed = probe && key === 'sqlite'
        const { gateway, url } = await startGateway(ctx, key === 'memory' ? 'memory' : 'sqlite', probed, key !== 'transient')
        const sql = probed ? async (): Promise<SqlCounts> => await gateway.request<SqlCounts>({ type: 'sql' }) : undefined
        return http(key, gateway, `${url}/v1/turns?wait=true`, (message) => ({ message, interactive: false }), sql)
      }
      case 'peer': {
        const { child, ready } = await ctx.group.spawn('peer', 'peer-ai-sdk.ts', { options })
        return http(key, child, `${String(ready.url)}/v1/turns`, (message) => ({ message }))
      }
    }
  }))
}

/**
 * A cold gateway is several times slower for its first ~1000 turns (JIT, lazy set-up; seen
 * here), more than a few seconds of warm-up cover on a loaded machine: prime every runner,
 * unmeasured, until it has run PRIME_TURNS turns or for 5 warm-up periods.
 */
async function prime (ctx: Ctx, runners: readonly Runner[]): Promise<void> {
  const { knobs } = ctx
  for (const runner of runners) {
    const until = Date.now() + 5 * knobs.warmupMs
    let primed = 0
    while (primed < PRIME_TURNS && Date.now() < until) {
      primed += (await runner.run({
        concurrency: knobs.concurrency, warmupMs: 0, durationMs: Math.min(1000, knobs.warmupMs), message: TURN_MESSAGE
      })).total
    }
  }
}

/** `prime` for a lone Tollgate gateway: ordinary turns from the HTTP load driver. */
async function primeOverHttp (ctx: Ctx, load: Child, url: string): Promise<void> {
  const { knobs } = ctx
  const until = Date.now() + 5 * knobs.warmupMs
  for (let primed = 0; primed < PRIME_TURNS && Date.now() < until;) {
    const durationMs = Math.min(1000, knobs.warmupMs)
    primed += (await load.request<LoopResult>({
      type: 'run', concurrency: knobs.concurrency, warmupMs: 0, durationMs, url: `${url}/v1/turns?wait=true`, body: { message: TURN_MESSAGE, interactive: false }
    }, durationMs + 60_000)).total
  }
}

interface Measured {
  result: LoopResult
  providerCalls: number
  toolRuns: number
  sql: SqlPerTurn | null
  cpu: RunCpu | null
}

/** CPU ms the run cost each process (`driver`: null for the bare loop, which drives itself). */
interface RunCpu { runner: CpuSample, provider: number, driver: number | null }

function sampleRun (ctx: Ctx, runner: Runner): Array<CpuSample | null> {
  return [runner.pid, ctx.provider.proc.pid, runner.driver?.proc.pid].map((pid) => pid === undefined ? null : cpuSample(pid))
}

function runCpu (before: Array<CpuSample | null>, after: Array<CpuSample | null>, driven: boolean): RunCpu | null {
  const [runner, provider, driver] = before.map((b, i) => cpuSince(b, after[i] ?? null))
  if (runner == null || provider == null || (driven && driver == null)) return null
  return { runner, provider: provider.process, driver: driver?.process ?? null }
}

/** One closed-loop run, with the provider calls, tool runs, SQL work and CPU time it caused. */
async function measure (ctx: Ctx, runner: Runner, loop: Loop): Promise<Measured> {
  const [calls0, tools0, sql0] = [await providerRequests(ctx), await runner.toolRuns(), await runner.sql?.() ?? null]
  const cpu0 = sampleRun(ctx, runner)
  const result = await runner.run(loop)
  const cpu = runCpu(cpu0, sampleRun(ctx, runner), runner.driver !== null)
  const [calls1, tools1, sql1] = [await providerRequests(ctx), await runner.toolRuns(), await runner.sql?.() ?? null]
  const sql = sql0 === null || sql1 === null
    ? null
    : {
        statements: sql1.statements - sql0.statements,
        commits: sql1.commits - sql0.commits,
        events: (sql1.inserts.tollgate_events ?? 0) - (sql0.inserts.tollgate_events ?? 0)
      }
  return { result, providerCalls: calls1 - calls0, toolRuns: tools1 - tools0, sql, cpu }
}

interface Tally {
  completed: number
  windowMs: number
  total: number
  errors: number
  firstError: string | null
  latencies: number[]
  providerCalls: number
  toolRuns: number
  rounds: number[]
  /** CPU ms summed over the runs and the turns they ran (warm-up included); null once a run could not be read. */
  cpu: { runner: number, mainThread: number, provider: number, driver: number | null, turns: number } | null
}

function addCpu (sum: Tally['cpu'], run: RunCpu | null, turns: number): Tally['cpu'] {
  if (sum === null || run === null) return null
  return {
    runner: sum.runner + run.runner.process,
    mainThread: sum.mainThread + run.runner.mainThread,
    provider: sum.provider + run.provider,
    driver: sum.driver === null || run.driver === null ? null : sum.driver + run.driver,
    turns: sum.turns + turns
  }
}

function perTurn (cpu: Tally['cpu']): CpuPerTurn | null {
  if (cpu === null || cpu.turns === 0) return null
  return {
    runner: cpu.runner / cpu.turns,
    mainThread: cpu.mainThread / cpu.turns,
    provider: cpu.provider / cpu.turns,
    driver: cpu.driver === null ? null : cpu.driver / cpu.turns
  }
}

const THROUGHPUT_RUNNERS: readonly RunnerKey[] = ['route', 'loop', 'sqlite', 'transient', 'memory', 'peer']

async function throughput (ctx: Ctx): Promise<ThroughputFigures> {
  const { knobs } = ctx
  const load = (await ctx.group.spawn('http-load', 'http-load.ts')).child
  const runners = await startRunners(ctx, THROUGHPUT_RUNNERS, load)
  const measured: Loop = { concurrency: knobs.concurrency, warmupMs: knobs.warmupMs, durationMs: knobs.durationMs, message: TURN_MESSAGE }
  const tallies = new Map<string, Tally>(runners.map((r) => [
    r.key,
    {
      completed: 0, windowMs: 0, total: 0, errors: 0, firstError: null, latencies: [], providerCalls: 0, toolRuns: 0, rounds: [],
      cpu: { runner: 0, mainThread: 0, provider: 0, driver: r.driver === null ? null : 0, turns: 0 }
    }
  ]))
  await prime(ctx, runners)
  for (let round = 0; round < knobs.rounds; round++) {
    const order = runners.map((_, i) => runners[(i + round) % runners.length] as Runner)
    for (const runner of order) {
      const tally = tallies.get(runner.key) as Tally
      const { result, providerCalls, toolRuns, cpu } = await measure(ctx, runner, measured)
      tally.cpu = addCpu(tally.cpu, cpu, result.total + result.errors)
      tally.completed += result.completed
      tally.windowMs += result.windowMs
      tally.total += result.total
      tally.errors += result.errors
      tally.firstError ??= result.firstError
      for (const latency of result.latencies) tally.latencies.push(latency)
      tally.providerCalls += providerCalls
      tally.toolRuns += toolRuns
      tally.rounds.push(result.completed / (result.windowMs / 1000))
      ctx.log(`  round ${round + 1} ${runner.key}: ${(result.completed / (result.windowMs / 1000)).toFixed(0)} turns/s, ${result.errors} errors`)
    }
  }
  await Promise.all([...runners.map(async (r) => { await r.stop() }), stopChild(load)])

  const figures = (runner: Runner): RunnerFigures => {
    const tally = tallies.get(runner.key) as Tally
    if (tally.errors > 0) ctx.warnings.push(`${runner.key}: ${tally.errors} failed turns; first: ${tally.firstError ?? ''}`)
    const attempts = tally.total + tally.errors
    return {
      key: runner.key,
      label: runner.label,
      turnsPerSec: tally.completed / (tally.windowMs / 1000),
      roundsPerSec: tally.rounds,
      latency: summarize(tally.latencies),
      errors: tally.errors,
      firstError: tally.firstError,
      providerCallsPerTurn: attempts === 0 ? Number.NaN : tally.providerCalls / attempts,
      toolRunsPerTurn: attempts === 0 ? Number.NaN : tally.toolRuns / attempts,
      cpuPerTurn: perTurn(tally.cpu)
    }
  }
  return { runners: runners.map(figures) }
}

const TOOL_CALL_COUNTS = [0, 2, 4, 8] as const
/** Per tool-call count, at most this long the probed gateway runs turns (one at a time) to count SQL work. */
const SQL_COUNT_MS = 500

async function toolCalls (ctx: Ctx): Promise<ToolCallFigures> {
  const { knobs } = ctx
  const load = (await ctx.group.spawn('http-load', 'http-load.ts')).child
  const [runners, [probed]] = await Promise.all([startRunners(ctx, ['route', 'sqlite', 'memory'], load), startRunners(ctx, ['sqlite'], load, true)])
  if (probed === undefined) throw new Error('no probed SQLite gateway')
  await prime(ctx, runners)
  const points = new Map<RunnerKey, ToolCallPoint[]>(runners.map((r) => [r.key, []]))
  // SQL work per turn, counted on a gateway of its own: the probe would tax the timed ones.
  const sqlPerTurn = new Map<number, SqlPerTurn>()
  for (const calls of TOOL_CALL_COUNTS) {
    const { result, sql } = await measure(
      ctx, probed,
      { concurrency: 1, warmupMs: 0, durationMs: Math.min(SQL_COUNT_MS, knobs.toolCallsMs), message: turnMessage(calls) }
    )
    if (sql !== null && result.total > 0) {
      sqlPerTurn.set(
        calls,
        { statements: sql.statements / result.total, commits: sql.commits / result.total, events: sql.events / result.total }
      )
    }
  }
  await probed.stop()
  for (const [i, calls] of TOOL_CALL_COUNTS.entries()) {
    const order = runners.map((_, j) => runners[(j + i) % runners.length] as Runner)
    for (const runner of order) {
      const {
        result, providerCalls, toolRuns
      } = await measure(
        ctx, runner,
        { concurrency: 1, warmupMs: knobs.warmupMs, durationMs: knobs.toolCallsMs, message: turnMessage(calls) }
      )
      const sql = runner.key === 'sqlite' ? sqlPerTurn.get(calls) : undefined
      const attempts = result.total + result.errors
      const per = (n: number): number => (attempts === 0 ? Number.NaN : n / attempts)
      if (result.errors > 0) ctx.warnings.push(`tool-calls ${runner.key} × ${calls}: ${result.errors} failed turns; first: ${result.firstError ?? ''}`)
      points.get(runner.key)?.push({
        calls,
        latency: summarize(result.latencies),
        errors: result.errors,
        providerCallsPerTurn: per(providerCalls),
        toolRunsPerTurn: per(toolRuns),
        ...(sql === undefined ? {} : { sql })
      })
      ctx.log(`  ${runner.key} with ${calls} tool calls: p50 ${summarize(result.latencies).p50.toFixed(2)} ms`)
    }
  }
  await Promise.all([...runners.map(async (r) => { await r.stop() }), stopChild(load)])
  return { runners: runners.map((r) => ({ key: r.key, label: r.label, points: points.get(r.key) ?? [] })) }
}

async function cancel (ctx: Ctx): Promise<CancelFigures> {
  const { knobs } = ctx
  const [{ gateway, url }, client, load] = await Promise.all([
    startGateway(ctx),
    ctx.group.spawn('cancel', 'cancel-client.ts'),
    ctx.group.spawn('http-load', 'http-load.ts')
  ])
  const loadTurns = async (loop: Omit<Loop, 'message'>): Promise<LoopResult> =>
    await load.child.request<LoopResult>({ type: 'run', ...loop, url: `${url}/v1/turns?wait=true`, body: { message: TURN_MESSAGE, interactive: false } }, loop.warmupMs + loop.durationMs + 60_000)
  const sample = async (prefix: string, deadlineMs: number): Promise<number[]> =>
    (await client.child.request<{ latencies: number[] }>({ type: 'run', url, samples: knobs.cancelSamples, deadlineMs, prefix }, deadlineMs + 60_000)).latencies
  await primeOverHttp(ctx, load.child, url)
  await sample('warm', 2000)
  const idle = await sample('idle', 600_000)
  // The load runs on its own; cancels are sampled once it is in full swing and stop before it ends.
  const settle = Math.min(1000, knobs.cancelLoadMs / 4)
  const loaded = loadTurns({ concurrency: 16, warmupMs: 0, durationMs: knobs.cancelLoadMs })
  await sleep(settle)
  const underLoad = await sample('load', knobs.cancelLoadMs - 2 * settle)
  const background = await loaded
  await Promise.all([stopChild(gateway), stopChild(client.child), stopChild(load.child)])
  if (background.errors > 0) ctx.warnings.push(`cancel: the background load had ${background.errors} failed turns; first: ${background.firstError ?? ''}`)
  return {
    idle: summarize(idle), loaded: summarize(underLoad),
    loadTurnsPerSec: background.completed / (background.windowMs / 1000), loadErrors: background.errors
  }
}

async function firstEvent (ctx: Ctx): Promise<FirstEventFigures> {
  const { knobs } = ctx
  const [{ gateway, url }, client, load] = await Promise.all([
    startGateway(ctx), ctx.group.spawn('first-event', 'first-event.ts'), ctx.group.spawn('http-load', 'http-load.ts')
  ])
  // Primed as every other section's gateway is: a cold one times JIT compilation, not the path.
  await primeOverHttp(ctx, load.child, url)
  await stopChild(load.child)
  const samples = knobs.firstEventSamples
  const warmup = Math.min(FIRST_EVENT_WARMUP, samples)
  const timeout = 60_000 + (samples + warmup) * 1000
  const sse = await client.child.request<{ latencies: number[] }>({ type: 'sse', url, samples, warmup }, timeout)
  const ws = await client.child.request<{ latencies: number[] }>({ type: 'ws', url, samples, warmup }, timeout)
  await Promise.all([stopChild(gateway), stopChild(client.child)])
  return { sse: summarize(sse.latencies), ws: summarize(ws.latencies) }
}

interface Memory { rss: number, heapUsed: number, external: number, sockets: number }

async function idle (ctx: Ctx): Promise<IdleFigures> {
  const { knobs } = ctx
  const shares = split(knobs.idleConnections, knobs.idleProcesses)
  const [{ gateway, url }, ...clients] = await Promise.all([
    startGateway(ctx),
    ...shares.map(async (_, i) => (await ctx.group.spawn(`ws-idle-${i}`, 'ws-idle.ts')).child)
  ])
  const wsUrl = `${url.replace(/^http/, 'ws')}/v1/ws`
  const first = clients[0] as Child
  // Warm the connection path first, so the delta is what each further connection costs.
  await first.request({ type: 'open', url: wsUrl, count: Math.min(200, knobs.idleConnections), inFlight: CONNECT_IN_FLIGHT }, 120_000)
  await first.request({ type: 'close' })
  await new Promise((resolve) => setTimeout(resolve, 500))
  const before = await gateway.request<Memory>({ type: 'memory' })
  const t0 = monotonicNs()
  const opened = await Promise.all(clients.map(async (c, i) => await c.request<{ opened: number, failed: number, firstError: string | null }>({ type: 'open', url: wsUrl, count: shares[i], inFlight: CONNECT_IN_FLIGHT }, 300_000)))
  const openSeconds = Number(monotonicNs() - t0) / 1e9
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const after = await gateway.request<Memory>({ type: 'memory' })
  const open = await Promise.all(clients.map(async (c) => (await c.request<{ open: number }>({ type: 'check' })).open))
  await Promise.all(clients.map(async (c) => { await stopChild(c) }))
  await stopChild(gateway)

  const failed = opened.reduce((s, o) => s + o.failed, 0)
  const firstError = opened.find((o) => o.firstError !== null)?.firstError ?? null
  if (failed > 0) ctx.warnings.push(`idle: ${failed} connections failed to open; first: ${firstError ?? ''}`)
  return {
    requested: knobs.idleConnections,
    heldByServer: after.sockets - before.sockets,
    openAtClients: open.reduce((s, n) => s + n, 0),
    failed,
    firstError,
    openSeconds,
    rssDelta: after.rss - before.rss,
    heapDelta: after.heapUsed - before.heapUsed,
    externalDelta: after.external - before.external
  }
}

async function fanout (ctx: Ctx): Promise<FanoutFigures> {
  const { knobs } = ctx
  const shares = split(knobs.fanoutSubscribers, knobs.fanoutProcesses)
  const [{ gateway, url }, ...clients] = await Promise.all([
    startGateway(ctx),
    ...shares.map(async (_, i) => (await ctx.group.spawn(`fanout-${i}`, 'fanout.ts')).child)
  ])
  const wsUrl = `${url.replace(/^http/, 'ws')}/v1/ws`
  const opened = await Promise.all(clients.map(async (c, i) => await c.request<{ opened: number, failed: number, firstError: string | null }>({ type: 'open', url: wsUrl, count: shares[i], inFlight: CONNECT_IN_FLIGHT }, 120_000)))
  const subscribers = opened.reduce((s, o) => s + o.opened, 0)
  if (subscribers < knobs.fanoutSubscribers) ctx.warnings.push(`fanout: only ${subscribers} of ${knobs.fanoutSubscribers} subscribers connected; first error: ${opened.find((o) => o.firstError !== null)?.firstError ?? ''}`)

  const latencies: number[] = []
  let liveEvents = 0
  for (let k = 0; k < knobs.fanoutTurns; k++) {
    const key = `${HOLD_PREFIX}fanout-${k}`
    const res = await fetch(`${url}/v1/turns`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: key, interactive: false }) })
    const started = await res.json() as { turn_id?: string }
    if (res.status !== 202 || started.turn_id === undefined) throw new Error(`fan-out turn refused: HTTP ${res.status} ${JSON.stringify(started)}`)
    const turnId = started.turn_id
    await gateway.request({ type: 'watch', turnId })
    await Promise.all(clients.map(async (c) => await c.request({ type: 'subscribe', turnId, timeoutMs: 60_000 }, 90_000)))
    const released = monotonicNs()
    await ctx.provider.request({ type: 'release', key })
    const received = await Promise.all(clients.map(async (c) => await c.request<{ seqs: number[], ns: string[] }>({ type: 'collect', turnId, timeoutMs: 60_000 }, 90_000)))
    const { emits } = await gateway.request<{ emits: Array<[number, string]> }>({ type: 'emits', turnId })
    // Only events emitted after the release reached subscribers live; earlier ones came as replay.
    const live = new Map(emits.map(([seq, ns]) => [seq, BigInt(ns)] as const).filter(([, ns]) => ns >= released))
    liveEvents += live.size
    for (const r of received) {
      r.seqs.forEach((seq, i) => {
        const emitted = live.get(seq)
        if (emitted !== undefined) latencies.push(Number(BigInt(r.ns[i] as string) - emitted) / 1e6)
      })
    }
  }
  await Promise.all(clients.map(async (c) => { await stopChild(c) }))
  await stopChild(gateway)
  const expectedSamples = liveEvents * subscribers
  if (latencies.length !== expectedSamples) ctx.warnings.push(`fanout: ${latencies.length} deliveries measured, ${expectedSamples} expected (each live event once per subscriber)`)
  return {
    subscribers, turns: knobs.fanoutTurns, liveEventsPerTurn: liveEvents / knobs.fanoutTurns, expectedSamples,
    latency: summarize(latencies)
  }
}

/** Resident memory of `pid` in bytes, from /proc/<pid>/status; null where it is missing. */
function residentBytes (pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m === null ? null : Number(m[1]) * 1024
  } catch {
    return null
  }
}

/** Streams per runner in the unmeasured warm-up load (JIT, connection pools, lazy set-up). */
const STREAM_WARMUP = 10

interface StreamRunner { key: StreamRunnerKey, server: Child, url: string, body: (message: string) => Record<string, unknown> }

/**
 * Streaming: the same streaming provider behind four runners (Tollgate by default wiring with an
 * agent without tools, the same gateway on the memory store, a bare Fastify SSE relay, a Fastify
 * route with the AI SDK's streamText), at each load a batch of concurrent streams started at
 * once; see bench/README.md.
 */
async function streaming (ctx: Ctx): Promise<StreamingFigures> {
  const { knobs } = ctx
  const options = { providerUrl: ctx.providerUrl }
  const [gateway, memory, relay, peer, clients] = await Promise.all([
    ctx.group.spawn('tollgate-streaming', 'gateway-server.ts', {
      options: { ...options, stream: true, store: 'sqlite', probe: false, durable: true, noTools: true }, execArgv: ['--expose-gc']
    }),
    ctx.group.spawn('tollgate-streaming-memory', 'gateway-server.ts', {
      options: { ...options, stream: true, store: 'memory', probe: false, durable: true, noTools: true }, execArgv: ['--expose-gc']
    }),
    ctx.group.spawn('relay', 'stream-relay.ts', { options }),
    ctx.group.spawn('peer', 'peer-ai-sdk.ts', { options: { ...options, stream: true } }),
    ctx.group.spawn('stream-clients', 'stream-clients.ts')
  ])
  const runners: StreamRunner[] = [
    { key: 'tollgate', server: gateway.child, url: `${String(gateway.ready.url)}/v1/turns`, body: (message) => ({ message, interactive: false }) },
    { key: 'tollgate-memory', server: memory.child, url: `${String(memory.ready.url)}/v1/turns`, body: (message) => ({ message, interactive: false }) },
    { key: 'relay', server: relay.child, url: `${String(relay.ready.url)}/v1/stream`, body: (message) => ({ message }) },
    { key: 'ai-sdk', server: peer.child, url: `${String(peer.ready.url)}/v1/stream`, body: (message) => ({ message }) }
  ]
  // The database file before any turn, against database and WAL after a graceful stop, over every
  // answer (warm-up included): a WAL read at any other time holds frames that a checkpoint later
  // folds into fewer pages. The schema, written to the WAL at start, is counted in the growth.
  const storedBefore = (await gateway.child.request<{ database: number }>({ type: 'storage' })).database
  let answersStored = 0
  const answerMs = knobs.streamTokens * knobs.streamIntervalMs
  let batch = 0
  const runLoad = async (runner: StreamRunner, streams: number): Promise<{ deltas: number, errors: number, firstError: string | null, seconds: number, latency: StreamPoint['latency'] }> => {
    const id = batch++
    const bodies = Array.from({ length: streams }, (_, i) => runner.body(streamMessage(knobs.streamTokens, knobs.streamIntervalMs, `s${id}-${i}`)))
    const kind = runner.key === 'tollgate-memory' ? 'tollgate' : runner.key
    return await clients.child.request({ type: 'run', kind, url: runner.url, bodies, streams, tokens: knobs.streamTokens }, answerMs * 4 + 120_000)
  }
  const warmup = Math.min(STREAM_WARMUP, Math.max(...knobs.streamLoads))
  for (const runner of runners) {
    const warm = await runLoad(runner, warmup)
    if (runner.key === 'tollgate') answersStored += warmup - warm.errors
    if (warm.errors > 0) ctx.warnings.push(`streaming warm-up ${runner.key}: ${warm.errors} failed streams; first: ${warm.firstError ?? ''}`)
  }
  const points: StreamPoint[] = []
  // Every round runs the whole list of loads again; the runners' order rotates at every load.
  const schedule = Array.from({ length: knobs.streamRounds }, (_, round) => knobs.streamLoads.map((streams) => ({ round, streams }))).flat()
  for (const [i, { round, streams }] of schedule.entries()) {
    const order = runners.map((_, j) => runners[(j + i) % runners.length] as StreamRunner)
    for (const runner of order) {
      const pid = runner.server.proc.pid as number
      const rssBefore = residentBytes(pid)
      const cpu0 = cpuSample(pid)
      const others0 = [ctx.provider.proc.pid as number, clients.child.proc.pid as number].map(cpuSample)
      const run = runLoad(runner, streams)
      // Halfway through an answer every stream of the load is in flight.
      await Promise.race([sleep(answerMs / 2), run.catch(() => {})])
      const rssMid = residentBytes(pid)
      const result = await run
      // Work the streams left behind (SQLite compacts finished turns after their finish) is theirs.
      if (runner.key === 'tollgate') await runner.server.request({ type: 'settled' }, 60_000)
      const cpu = cpuSince(cpu0, cpuSample(pid))
      const [providerCpu, clientCpu] = [ctx.provider.proc.pid as number, clients.child.proc.pid as number]
        .map((p, k) => cpuSince(others0[k] ?? null, cpuSample(p))?.process ?? null)
      if (runner.key === 'tollgate') answersStored += streams - result.errors
      if (result.errors > 0) ctx.warnings.push(`streaming ${runner.key} × ${streams}: ${result.errors} failed streams; first: ${result.firstError ?? ''}`)
      points.push({
        load: i, round, streams, runner: runner.key,
        deltas: result.deltas, expectedDeltas: streams * knobs.streamTokens, seconds: result.seconds,
        latency: result.latency, errors: result.errors, cpu, providerCpu: providerCpu ?? null, clientCpu: clientCpu ?? null,
        rssGrowth: rssBefore === null || rssMid === null ? null : rssMid - rssBefore
      })
      ctx.log(`  round ${round + 1}: ${runner.key} × ${streams} streams: ${result.deltas} deltas in ${result.seconds.toFixed(1)} s, ${result.errors} failed`)
    }
  }
  // A graceful stop first: what stays in the database and its WAL is what the deployment keeps.
  await gateway.child.request({ type: 'close' })
  const after = await gateway.child.request<{ database: number, wal: number }>({ type: 'storage' })
  const storedAfter = after.database + after.wal
  await Promise.all([gateway.child.stop(), stopChild(memory.child), stopChild(relay.child), stopChild(peer.child), clients.child.stop()])
  return {
    tokens: knobs.streamTokens,
    intervalMs: knobs.streamIntervalMs,
    rounds: knobs.streamRounds,
    points,
    storedBytesPerAnswer: answersStored === 0 ? null : (storedAfter - storedBefore) / answersStored,
    answersStored
  }
}

const PARSER_APIS: readonly ParserApi[] = ['anthropic', 'responses', 'chat']
const PARSER_IMPLS: readonly ParserImplKey[] = ['tollgate', 'ai-sdk', 'official']
/** Answers each reader reads before it is measured (JIT, connection pools). */
const PARSER_WARMUP = 50

function packageVersion (name: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version
  } catch {
    return '?'
  }
}

/**
 * Parsers: the per-delta CPU of reading each provider API's stream, Tollgate's own providers
 * against the AI SDK provider packages and the official clients (docs/decisions/0220); see
 * bench/README.md.
 */
async function parsers (ctx: Ctx): Promise<ParserFigures> {
  const { knobs } = ctx
  const shape = { textDeltas: knobs.parserTextDeltas, reasoningDeltas: Math.max(1, Math.round(knobs.parserTextDeltas / 4)) }
  const wire = await ctx.group.spawn('wire-server', 'wire-server.ts', { options: shape })
  const baseUrl = String(wire.ready.baseUrl)
  const points: ParserPoint[] = []
  for (const api of PARSER_APIS) {
    const readers = await Promise.all(PARSER_IMPLS.map(async (impl) => ({
      impl,
      child: (await ctx.group.spawn(`parser-${api}-${impl}`, 'parser-runner.ts', { options: { api, impl, baseUrl, shape } })).child
    })))
    const byImpl = new Map<ParserImplKey, ParserPoint>(PARSER_IMPLS.map((impl) => [impl, {
      api, impl, cpuPerKiloDeltas: [], deltas: 0, expectedDeltas: 0, errors: 0, firstError: null
    }]))
    type RunOut = { deltas: number, errors: number, firstError: string | null, cpuMs: number }
    for (const r of readers) {
      const warm = await r.child.request<RunOut>({ type: 'run', streams: Math.min(PARSER_WARMUP, knobs.parserStreams), concurrency: knobs.parserConcurrency }, 120_000)
      if (warm.errors > 0) ctx.warnings.push(`parsers warm-up ${api} ${r.impl}: ${warm.errors} failed; first: ${warm.firstError ?? ''}`)
    }
    for (let round = 0; round < knobs.parserRounds; round++) {
      const order = readers.map((_, j) => readers[(j + round) % readers.length] as typeof readers[number])
      for (const r of order) {
        const out = await r.child.request<RunOut>({ type: 'run', streams: knobs.parserStreams, concurrency: knobs.parserConcurrency }, 600_000)
        const point = byImpl.get(r.impl) as ParserPoint
        point.cpuPerKiloDeltas.push(out.deltas === 0 ? Number.NaN : out.cpuMs / (out.deltas / 1000))
        point.deltas += out.deltas
        point.expectedDeltas += knobs.parserStreams * (shape.textDeltas + shape.reasoningDeltas)
        point.errors += out.errors
        point.firstError ??= out.firstError
      }
    }
    for (const impl of PARSER_IMPLS) {
      const point = byImpl.get(impl) as ParserPoint
      points.push(point)
      ctx.log(`  ${api} ${impl}: ${point.cpuPerKiloDeltas.map((v) => v.toFixed(1)).join(' / ')} CPU ms per 1,000 deltas, ${point.errors} errors`)
    }
    await Promise.all(readers.map(async (r) => { await r.child.stop() }))
  }
  await wire.child.stop()
  const versions = ['@ai-sdk/anthropic', '@ai-sdk/openai', '@ai-sdk/openai-compatible', '@anthropic-ai/sdk', 'openai', 'undici']
    .map((name) => `${name} ${packageVersion(name)}`).join(', ')
  return {
    textDeltas: shape.textDeltas,
    reasoningDeltas: shape.reasoningDeltas,
    streams: knobs.parserStreams,
    concurrency: knobs.parserConcurrency,
    rounds: knobs.parserRounds,
    points,
    versions
  }
}

async function main (): Promise<void> {
  const machine = describeMachine()
  let knobs: Knobs
  try {
    knobs = readKnobs(process.env, machine.openFiles, join(ROOT, 'bench', 'results.md'))
  } catch (err) {
    if (err instanceof KnobError) {
      process.stderr.write(`bench: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
  const log = (line: string): void => { process.stderr.write(`${line}\n`) }
  const group = new ChildGroup(knobs.verbose)
  const stop = (signal: NodeJS.Signals): void => {
    log(`bench: ${signal}, stopping the bench processes`)
    void group.close().finally(() => process.exit(130))
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)

  const report: Report = { date: new Date().toISOString(), machine, versions: `${describeVersions(ROOT)}; ${COMPILED ? 'compiled by tsc (as npm start runs it)' : 'run from source through tsx'}`, knobs, loadBefore: loadAverage(), loadAfter: '', warnings: [] }
  try {
    const provider = await group.spawn('fake-provider', 'fake-provider-server.ts')
    const ctx: Ctx = { knobs, group, provider: provider.child, providerUrl: String(provider.ready.baseUrl), warnings: report.warnings, log }
    if (knobs.sections.has('throughput')) {
      log(`bench: throughput (concurrency ${knobs.concurrency}, ${knobs.rounds} × ${knobs.durationMs} ms per runner)`)
      report.throughput = await throughput(ctx)
    }
    if (knobs.sections.has('tool-calls')) {
      log(`bench: cost per tool call (concurrency 1, ${TOOL_CALL_COUNTS.join('/')} tool calls, ${knobs.toolCallsMs} ms each)`)
      report.toolCalls = await toolCalls(ctx)
    }
    if (knobs.sections.has('cancel')) {
      log(`bench: cancel → terminal event (${knobs.cancelSamples} samples idle, then under load)`)
      report.cancel = await cancel(ctx)
    }
    if (knobs.sections.has('first-event')) {
      log(`bench: time to first event (${knobs.firstEventSamples} samples per path)`)
      report.firstEvent = await firstEvent(ctx)
    }
    if (knobs.sections.has('idle')) {
      log(`bench: ${knobs.idleConnections} idle WebSockets from ${knobs.idleProcesses} processes`)
      report.idle = await idle(ctx)
    }
    if (knobs.sections.has('fanout')) {
      log(`bench: fan-out to ${knobs.fanoutSubscribers} subscribers × ${knobs.fanoutTurns} turns`)
      report.fanout = await fanout(ctx)
    }
    if (knobs.sections.has('streaming')) {
      log(`bench: streaming (${knobs.streamRounds} round(s) of ${knobs.streamLoads.join('/')} concurrent streams of ${knobs.streamTokens} tokens, one every ${knobs.streamIntervalMs} ms)`)
      report.streaming = await streaming(ctx)
    }
    if (knobs.sections.has('parsers')) {
      log(`bench: parsers (${knobs.parserStreams} answers × ${knobs.parserRounds} rounds per implementation, ${knobs.parserConcurrency} at a time)`)
      report.parsers = await parsers(ctx)
    }
    await stopChild(provider.child)
  } finally {
    await group.close()
  }
  report.loadAfter = loadAverage()
  const markdown = renderReport(report)
  process.stdout.write(`${markdown}\n`)
  if (knobs.resultsPath !== '') {
    await writeFile(knobs.resultsPath, `${markdown}\n`)
    log(`bench: wrote ${knobs.resultsPath}`)
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exitCode = 1
})
