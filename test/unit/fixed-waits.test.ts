/**
 * Tests wait on signals (events, observer records, log lines, `eventually` from
 * test/helpers/eventually.ts), not on the clock: a fixed wait is either too short on a loaded
 * machine or wasted time everywhere else. The few that remain are part of what is tested, and
 * each says why.
 *
 * The rule this file checks, over the test code in test/ (test/helpers and test/fixtures aside:
 * there pacing is the behaviour of a fake server, a fake provider or a fixture tool, and the
 * generic `eventually` polls by design):
 *
 * - A fixed wait is a call of `setTimeout(` or `sleep(` (or another name `setTimeout` of
 *   node:timers/promises is imported as) that delays the test. Each one carries a comment
 *   starting `// fixed wait:` on its own line or the line above, saying why no signal will do
 *   (the delay is the scenario, or a negative check: "nothing happens within X").
 * - A deadline is not a wait: a `setTimeout(` whose callback rejects, fails, throws or kills a
 *   process only fires when the test is already failing (or stuck).
 * - `setInterval(` is not counted: in a test it paces a fake server's output, it delays nothing.
 * - Fewer than 10 fixed waits may remain, and every `// fixed wait:` comment stands at one.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const TEST_DIR = fileURLToPath(new URL('..', import.meta.url))
const EXCLUDED = ['helpers/', 'fixtures/', 'unit/fixed-waits.test.ts']
const MARKER = '// fixed wait:'
const MAX_FIXED_WAITS = 9

interface Timer {
  /** 1-based line of the call. */
  line: number
  kind: 'wait' | 'deadline'
  marked: boolean
}

/** The text of a call's arguments, from just after its `(` to the matching `)` (or a bounded prefix). */
function callArguments (source: string, open: number): string {
  let depth = 0
  const end = Math.min(source.length, open + 2000)
  for (let i = open; i < end; i++) {
    const c = source[i]
    if (c === '(') depth++
    else if (c === ')' && --depth === 0) return source.slice(open + 1, i)
  }
  return source.slice(open + 1, end)
}

/** A timer whose callback only reports a failure (or ends a stuck process) guards the test, it does not delay it. */
function isDeadline (args: string): boolean {
  return /\breject\(|\bassert\.fail\(|\bthrow\b|\.kill\(/.test(args)
}

function findTimers (source: string): Timer[] {
  const names = ['setTimeout', 'sleep']
  for (const m of source.matchAll(/import\s*\{([^}]*)\}\s*from\s*['"](?:node:)?timers\/promises['"]/g)) {
    for (const alias of (m[1] ?? '').matchAll(/\bsetTimeout\s+as\s+(\w+)/g)) if (alias[1] !== undefined) names.push(alias[1])
  }
  const lines = source.split('\n')
  const lineStarts: number[] = []
  let offset = 0
  for (const l of lines) {
    lineStarts.push(offset)
    offset += l.length + 1
  }
  const lineOf = (index: number): number => {
    let line = 0
    while (line + 1 < lineStarts.length && (lineStarts[line + 1] ?? Infinity) <= index) line++
    return line
  }
  const timers: Timer[] = []
  // Not a method (`time.sleep(` in a script string, `timers.setTimeout(`) and not part of a longer name.
  const call = new RegExp(`(?<![\\w.$])(${[...new Set(names)].join('|')})\\s*\\(`, 'g')
  for (const m of source.matchAll(call)) {
    const index = m.index ?? 0
    const line = lineOf(index)
    const text = lines[line] ?? ''
    const trimmed = text.trimStart()
    // A call named in a comment is not a call.
    if (trimmed.startsWith('//') || trimmed.startsWith('*') || trimmed.startsWith('/*')) continue
    if (text.slice(0, index - (lineStarts[line] ?? 0)).includes('//')) continue
    const args = callArguments(source, index + m[0].length - 1)
    const kind = m[1] === 'setTimeout' && isDeadline(args) ? 'deadline' : 'wait'
    const marked = text.includes(MARKER) || (lines[line - 1] ?? '').trimStart().startsWith(MARKER)
    timers.push({ line: line + 1, kind, marked })
  }
  return timers
}

function testFiles (): string[] {
  return (readdirSync(TEST_DIR, { recursive: true }) as string[])
    .map((p) => p.split('\\').join('/'))
    .filter((p) => /\.(?:ts|mts|cts|js|mjs|cjs)$/.test(p))
    .filter((p) => !EXCLUDED.some((e) => p.startsWith(e) || p === e))
    .sort()
}

interface Found { file: string, line: number }

function survey (): { unmarked: Found[], waits: Found[], stale: Found[] } {
  const unmarked: Found[] = []
  const waits: Found[] = []
  const stale: Found[] = []
  for (const file of testFiles()) {
    const source = readFileSync(join(TEST_DIR, file), 'utf8')
    const timers = findTimers(source)
    for (const t of timers) {
      if (t.kind !== 'wait') continue
      waits.push({ file, line: t.line })
      if (!t.marked) unmarked.push({ file, line: t.line })
    }
    source.split('\n').forEach((text, i) => {
      if (!text.includes(MARKER)) return
      // A marker belongs to a wait on its own line or the next.
      if (!timers.some((t) => t.kind === 'wait' && (t.line === i + 1 || t.line === i + 2))) stale.push({ file, line: i + 1 })
    })
  }
  return { unmarked, waits, stale }
}

const where = (found: Found[]): string => found.map((f) => `test/${f.file}:${f.line}`).join(', ')

test('every fixed wait in test/ carries a "// fixed wait:" comment saying why', () => {
  const { unmarked } = survey()
  assert.deepEqual(unmarked, [], `wait on a signal instead (eventually, an event, an observer record, a log line), or say why not with "${MARKER}": ${where(unmarked)}`)
})

test('fewer than 10 fixed waits remain in test/', () => {
  const { waits } = survey()
  assert.ok(waits.length <= MAX_FIXED_WAITS, `${waits.length} fixed waits: ${where(waits)}`)
})

test('every "// fixed wait:" comment stands at a fixed wait', () => {
  const { stale } = survey()
  assert.deepEqual(stale, [], `markers with no wait on their line or the next: ${where(stale)}`)
})

test('the checker tells fixed waits from deadlines and from mentions', () => {
  const source = [
    "import { setTimeout as pause } from 'node:timers/promises'",
    'await new Promise((resolve) => setTimeout(resolve, 100))',
    '// fixed wait: the scenario',
    'await sleep(50)',
    'await pause(10) // fixed wait: the scenario too',
    'const guard = setTimeout(() => { assert.fail(\'stuck\') }, 10_000)',
    'setTimeout(() => {',
    '  done()',
    "  reject(new Error('never'))",
    '}, 5000)',
    "setTimeout(() => { child.kill('SIGKILL') }, 30_000)",
    "const script = 'time.sleep(0.05)'",
    "t.mock.timers.enable({ apis: ['setTimeout'] })",
    '// a comment naming setTimeout(resolve, 1) is not a call',
    'clearTimeout(guard)'
  ].join('\n')
  assert.deepEqual(findTimers(source), [
    { line: 2, kind: 'wait', marked: false },
    { line: 4, kind: 'wait', marked: true },
    { line: 5, kind: 'wait', marked: true },
    { line: 6, kind: 'deadline', marked: false },
    { line: 7, kind: 'deadline', marked: false },
    { line: 11, kind: 'deadline', marked: false }
  ])
})
