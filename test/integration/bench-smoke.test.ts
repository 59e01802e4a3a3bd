/**
 * The benchmark is not part of the suite; this only checks that its processes still start
 * against the current core and that a tiny run ends with its table and with no process left.
 * Nothing here looks at a timing.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'

function run (env: NodeJS.ProcessEnv): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--import', 'tsx', 'bench/run.ts'], { env, timeout: 120_000 }, (_err, stdout, stderr) => {
      resolve({ code: child.exitCode, stdout, stderr })
    })
  })
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
