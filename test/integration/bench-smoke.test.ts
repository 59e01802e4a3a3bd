/**
 * The benchmark is not part of the suite; this only checks that its processes still start
 * against the current core, that they do the work the report claims (the same provider calls and
 * tool runs everywhere, events persisted by the default SQLite wiring) and that a tiny run ends
 * with its tables and with no process left. Nothing here looks at a timing.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'

function run (env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--import', 'tsx', 'bench/run.ts'], { env, timeout: timeoutMs }, (_err, stdout, stderr) => {
      resolve({ code: child.exitCode, stdout, stderr })
    })
  })
}

/** Cells of the Markdown table rows whose first cell starts with `label`. */
function rows (markdown: string, label: string): string[][] {
  return markdown.split('\n')
    .filter((l) => l.startsWith(`| ${label}`))
    .map((l) => l.split('|').slice(1, -1).map((c) => c.trim()))
}

/** Processes whose environment carries `marker`: the run's children inherit it. */
function processesWith (marker: string): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(marker)) found.push(Number(entry))
    } catch {}
  }
  return found
}

test('a tiny fan-out bench run prints its table with every delivery measured and leaves no bench process behind', { timeout: 150_000 }, async () => {
  const marker = `tollgate-bench-smoke-${randomUUID()}`
  const { code, stdout, stderr } = await run({
    ...process.env,
    BENCH_SMOKE_MARKER: marker,
    BENCH_ONLY: 'fanout',
    BENCH_FANOUT_SUBSCRIBERS: '3',
    BENCH_FANOUT_PROCESSES: '1',
    BENCH_FANOUT_TURNS: '1',
    BENCH_RESULTS: ''
  })
  assert.equal(code, 0, stderr)
  const row = stdout.split('\n').find((l) => /^\| 3 \| 1 \|/.test(l))
  assert.ok(row !== undefined, `no fan-out row in:\n${stdout}`)
  const cells = row.split('|').map((c) => c.trim())
  const [measured, expected] = (cells[4] ?? '').match(/\d+/g) ?? []
  assert.ok(Number(expected) > 0, row)
  assert.equal(measured, expected, row)
  assert.doesNotMatch(stdout, /## Warnings/)
  assert.deepEqual(processesWith(marker), [])
})

test('a tiny run of the turn sections compares every runner on the same work, and the default SQLite wiring persists every turn\'s events', { timeout: 240_000 }, async () => {
  const marker = `tollgate-bench-smoke-${randomUUID()}`
  const { code, stdout, stderr } = await run({
    ...process.env,
    BENCH_SMOKE_MARKER: marker,
    BENCH_ONLY: 'throughput,tool-calls,cancel,first-event',
    BENCH_WARMUP_MS: '0',
    BENCH_DURATION_MS: '200',
    BENCH_ROUNDS: '1',
    BENCH_TOOL_CALLS_MS: '200',
    BENCH_CANCEL_SAMPLES: '3',
    BENCH_CANCEL_LOAD_MS: '2000',
    BENCH_FIRST_EVENT_SAMPLES: '3',
    BENCH_RESULTS: ''
  }, 220_000)
  assert.equal(code, 0, stderr)
  assert.doesNotMatch(stdout, /## Warnings/)
  const throughput = [
    'baseline: bare Fastify route', 'extra: bare loop', 'Tollgate, SQLite store', 'Tollgate on SQLite with turns not durable', 'Tollgate, memory store',
    'peer: Fastify route + AI SDK'
  ]
    .map((label) => rows(stdout, label)[0])
  for (const row of throughput) {
    assert.ok(row !== undefined, stdout)
    assert.deepEqual(row.slice(-3), ['0', '2.00', '2.00'], row.join(' | '))
  }
  assert.equal(rows(stdout, 'Tollgate (SQLite) / bare Fastify route').length, 1, stdout)
  assert.equal(rows(stdout, 'Tollgate (SQLite) / AI SDK peer').length, 1, stdout)
  assert.equal(rows(stdout, 'Tollgate (SQLite) / Tollgate (SQLite, not durable)').length, 1, stdout)
  // CPU per turn of every runner, read from /proc: the runner's process, its main thread, the
  // provider, the load driver (the bare loop drives itself), their sum, the two ceiling ratios.
  const cpu = rows(stdout, 'CPU of ')
  assert.deepEqual(cpu.map((r) => r[0]), [
    'CPU of bare Fastify route', 'CPU of bare loop', 'CPU of Tollgate (SQLite)', 'CPU of Tollgate (SQLite, not durable)', 'CPU of Tollgate (memory)', 'CPU of AI SDK peer'
  ])
  for (const r of cpu) {
    const [process, main, provider, driver, sum] = r.slice(1, 6).map(Number)
    // Kernel ticks are 10 ms: over a 200 ms window a lightly loaded process may show none.
    assert.ok((process ?? 0) > 0 && (main ?? -1) >= 0 && (main ?? 0) <= (process ?? 0) && (provider ?? -1) >= 0, r.join(' | '))
    assert.ok(r[0] === 'CPU of bare loop' ? r[4] === '(drives itself)' : (driver ?? -1) >= 0, r.join(' | '))
    assert.ok(Math.abs((sum ?? 0) - (process ?? 0) - (provider ?? 0) - (r[0] === 'CPU of bare loop' ? 0 : driver ?? 0)) < 0.0025, r.join(' | '))
  }
  assert.deepEqual(cpu[0]?.slice(6), ['1.00×', '1.00×'])

  const sqlite = rows(stdout, 'Tollgate, SQLite store').slice(1)
  assert.deepEqual(sqlite.map((r) => [r[1], r[11]]), [['0', '1.00 / 0.00'], ['2', '2.00 / 2.00'], ['4', '2.00 / 4.00'], ['8', '2.00 / 8.00']])
  // Every event of every turn reached the event log: turn.started, iteration(s), a tool_call and a
  // tool_result per call, the terminal event (text deltas aside).
  const events = sqlite.map((r) => Number(r[7]))
  for (const [i, calls] of [0, 2, 4, 8].entries()) assert.ok((events[i] ?? 0) >= 3 + (calls > 0 ? 1 + 2 * calls : 0), `events written: ${String(events)}`)
  assert.deepEqual(rows(stdout, 'Tollgate, memory store').slice(1).map((r) => r[7]), ['', '', '', ''])
  assert.equal(rows(stdout, 'Tollgate (SQLite)').filter((r) => r[0] === 'Tollgate (SQLite)').length, 1, 'a per-tool-call slope row')
  assert.deepEqual(rows(stdout, 'idle').map((r) => r[1]), ['3'])
  // Under load the sampler stops at a deadline, so a slow machine may take fewer samples.
  const underLoad = rows(stdout, 'under load').map((r) => Number(r[1]))
  assert.equal(underLoad.length, 1)
  assert.ok((underLoad[0] ?? 0) >= 1 && (underLoad[0] ?? 0) <= 3, String(underLoad))
  assert.equal(rows(stdout, 'WS turn.start').length, 1)
  assert.deepEqual(processesWith(marker), [])
})

test('a tiny streaming bench run prints its table, every runner delivers every token of every stream in every round, and no bench process is left', { timeout: 150_000 }, async () => {
  const marker = `tollgate-bench-smoke-${randomUUID()}`
  const { code, stdout, stderr } = await run({
    ...process.env,
    BENCH_SMOKE_MARKER: marker,
    BENCH_ONLY: 'streaming',
    BENCH_STREAMS: '2,3',
    BENCH_STREAM_ROUNDS: '2',
    BENCH_STREAM_TOKENS: '10',
    BENCH_STREAM_INTERVAL_MS: '10',
    BENCH_RESULTS: ''
  })
  assert.equal(code, 0, stderr)
  assert.doesNotMatch(stdout, /## Warnings/)
  for (const streams of [2, 3]) {
    for (const round of [1, 2]) {
      const points = rows(stdout, `${round} | ${streams} | `)
      assert.deepEqual(points.map((r) => r[2]).sort(), ['Fastify + AI SDK streamText', 'Tollgate, SQLite (default)', 'Tollgate, memory store (no event log)', 'bare Fastify SSE relay'], stdout)
      for (const r of points) {
        // Delivered (expected), then the errors column: every token of every stream, no failed stream.
        assert.equal(r[3], `${streams * 10} (${streams * 10})`, r.join(' | '))
        assert.equal(r[10], '0', r.join(' | '))
      }
    }
    // One row per pair and load size, over both rounds' loads.
    for (const pair of ['Tollgate / bare Fastify SSE relay', 'Tollgate / Fastify + AI SDK streamText', 'Tollgate, memory store / bare Fastify SSE relay', 'Tollgate, SQLite / Tollgate, memory store']) {
      const ratio = rows(stdout, `${streams} streams: ${pair}`)
      assert.equal(ratio.length, 1, stdout)
      assert.equal(ratio[0]?.[1], '2', stdout)
    }
  }
  // A warm-up of as many streams as the largest load (3), then two rounds of five measured answers: all stored.
  const stored = /^Stored by Tollgate per answer .* over (\d+) answers\): ([\d.]+) KiB/m.exec(stdout)
  assert.ok(stored !== null, stdout)
  assert.equal(stored[1], '13')
  assert.ok(Number(stored[2]) > 0, stored[0])
  assert.deepEqual(processesWith(marker), [])
})

test('a tiny parsers bench run reads every answer of every provider API correctly with every implementation, and no bench process is left', { timeout: 150_000 }, async () => {
  const marker = `tollgate-bench-smoke-${randomUUID()}`
  const { code, stdout, stderr } = await run({
    ...process.env,
    BENCH_SMOKE_MARKER: marker,
    BENCH_ONLY: 'parsers',
    BENCH_PARSER_STREAMS: '4',
    BENCH_PARSER_ROUNDS: '1',
    BENCH_PARSER_TEXT_DELTAS: '12',
    BENCH_RESULTS: ''
  })
  assert.equal(code, 0, stderr)
  assert.doesNotMatch(stdout, /## Warnings/)
  for (const api of ['Anthropic Messages', 'OpenAI Responses', 'chat completions']) {
    const points = rows(stdout, `${api} | `)
    assert.equal(points.length, 3, stdout)
    // 4 answers of 12 text and 3 reasoning deltas, each checked whole: the errors column is 0.
    for (const r of points) {
      assert.match(r[4] ?? '', / \(60\)$/, r.join(' | '))
      assert.equal(r[5], '0', r.join(' | '))
    }
  }
  assert.deepEqual(processesWith(marker), [])
})
