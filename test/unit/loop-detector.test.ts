import { test } from 'node:test'
import assert from 'node:assert/strict'
import { LoopDetector, type LoopVerdict } from '../../src/turn/loop-detector.js'

function detector (overrides: { enabled?: boolean, windowSize?: number, maxRepeats?: number } = {}): LoopDetector {
  return new LoopDetector({ enabled: true, windowSize: 20, maxRepeats: 3, ...overrides })
}

function expectKind (verdict: LoopVerdict, kind: LoopVerdict['kind']): string {
  assert.equal(verdict.kind, kind, JSON.stringify(verdict))
  return 'message' in verdict ? verdict.message : ''
}

test('an exact repeat warns when it reaches max_repeats', () => {
  const loop = detector()
  const args = { path: '/tmp/foo' }
  expectKind(loop.record('file_read', args, 'contents'), 'ok')
  expectKind(loop.record('file_read', args, 'contents'), 'ok')
  const message = expectKind(loop.record('file_read', args, 'contents'), 'warning')
  assert.match(message, /'file_read'/)
  assert.match(message, /3 times/)
  assert.match(message, /identical arguments/)
})

test('an exact repeat blocks one call past max_repeats', () => {
  const loop = detector()
  for (let i = 0; i < 3; i++) loop.record('shell', { cmd: 'ls' }, 'output')
  const message = expectKind(loop.record('shell', { cmd: 'ls' }, 'output'), 'block')
  assert.match(message, /'shell'/)
  assert.match(message, /4 times/)
})

test('an exact repeat breaks two calls past max_repeats', () => {
  const loop = detector()
  for (let i = 0; i < 4; i++) loop.record('shell', { q: 'test' }, 'no results')
  const message = expectKind(loop.record('shell', { q: 'test' }, 'no results'), 'break')
  assert.match(message, /^Tool 'shell' called 5 times in a row with identical arguments/)
})

test('a different call in between resets the exact-repeat streak', () => {
  const loop = detector()
  loop.record('tool_a', { x: 1 }, 'r1')
  loop.record('tool_a', { x: 1 }, 'r1')
  loop.record('tool_b', {}, 'r2')
  expectKind(loop.record('tool_a', { x: 1 }, 'r1'), 'ok')
  expectKind(loop.record('tool_a', { x: 1 }, 'r1'), 'ok')
  expectKind(loop.record('tool_a', { x: 999 }, 'r_distinct'), 'ok')
})

test('ping-pong between two tools warns at four cycles', () => {
  const loop = detector()
  for (let i = 0; i < 7; i++) expectKind(loop.record(i % 2 === 0 ? 'read' : 'write', {}, `r${i}`), 'ok')
  const message = expectKind(loop.record('write', {}, 'r7'), 'warning')
  assert.match(message, /'read'/)
  assert.match(message, /'write'/)
  assert.match(message, /4 cycles/)
})

test('ping-pong escalates to block at five cycles and break at six', () => {
  const loop = detector()
  for (let i = 0; i < 9; i++) loop.record(i % 2 === 0 ? 'fetch' : 'parse', {}, `r${i}`)
  assert.match(expectKind(loop.record('parse', {}, 'r9'), 'block'), /5 cycles/)
  assert.match(expectKind(loop.record('fetch', {}, 'r10'), 'block'), /5 cycles/)
  assert.match(expectKind(loop.record('parse', {}, 'r11'), 'break'), /6 cycles/)
})

test('repeating one tool is reported as an exact repeat, not ping-pong', () => {
  const loop = detector()
  for (let i = 0; i < 10; i++) {
    const verdict = loop.record('read', {}, 'data')
    if (verdict.kind !== 'ok') assert.doesNotMatch(verdict.message, /alternating/)
  }
  assert.match(expectKind(loop.record('read', {}, 'data'), 'break'), /identical arguments/)
})

test('ping-pong is detected by tool names even when the args vary', () => {
  const loop = detector()
  for (let i = 0; i < 7; i++) expectKind(loop.record(i % 2 === 0 ? 'read' : 'write', { attempt: i }, `r${i}`), 'ok')
  assert.match(expectKind(loop.record('write', { attempt: 7 }, 'r7'), 'warning'), /alternating for 4 cycles/)
})

test('no-progress warns at five calls with different args and the same result', () => {
  const loop = detector()
  for (let i = 0; i < 4; i++) expectKind(loop.record('search', { query: `attempt_${i}` }, 'no results found'), 'ok')
  const message = expectKind(loop.record('search', { query: 'attempt_4' }, 'no results found'), 'warning')
  assert.match(message, /'search'/)
  assert.match(message, /5 times/)
  assert.match(message, /identical results/)
})

test('no-progress escalates to block at six calls and break at seven', () => {
  const loop = detector()
  for (let i = 0; i < 5; i++) loop.record('web_fetch', { q: `v${i}` }, 'timeout')
  assert.match(expectKind(loop.record('web_fetch', { q: 'v5' }, 'timeout'), 'block'), /6 times/)
  const message = expectKind(loop.record('web_fetch', { q: 'v6' }, 'timeout'), 'break')
  assert.match(message, /'web_fetch'/)
  assert.match(message, /7 times/)
  assert.match(message, /no progress/)
})

test('no-progress stays quiet when results differ', () => {
  const loop = detector()
  for (let i = 0; i < 8; i++) expectKind(loop.record('search', { q: `v${i}` }, `result_${i}`), 'ok')
})

test('no-progress is detected when other calls are interleaved', () => {
  const loop = detector()
  let last: LoopVerdict = { kind: 'ok' }
  for (let i = 0; i < 5; i++) {
    last = loop.record('search', { q: `v${i}` }, 'no results found')
    loop.record(`reader_${i}`, { path: `/f${i}` }, `body_${i}`)
  }
  assert.match(expectKind(last, 'warning'), /'search'.*identical results/)
})

test('identical args with the same result count as an exact repeat, not no-progress', () => {
  const loop = detector({ maxRepeats: 6 })
  for (let i = 0; i < 5; i++) expectKind(loop.record('search', { q: 'same' }, 'no results'), 'ok')
  assert.match(expectKind(loop.record('search', { q: 'same' }, 'no results'), 'warning'), /identical arguments/)
})

test('a disabled detector always returns ok', () => {
  const loop = detector({ enabled: false })
  for (let i = 0; i < 20; i++) expectKind(loop.record('tool', { x: 1 }, 'same'), 'ok')
})

test('the window size limits how many calls are remembered', () => {
  const pattern = (loop: LoopDetector): LoopVerdict[] => {
    const verdicts: LoopVerdict[] = []
    for (let i = 0; i < 5; i++) {
      verdicts.push(loop.record('search', { q: `v${i}` }, 'nothing'))
      loop.record(`other_${i}`, {}, `body_${i}`)
    }
    return verdicts
  }
  assert.equal(pattern(detector({ windowSize: 20 })).at(-1)?.kind, 'warning')
  assert.deepEqual(pattern(detector({ windowSize: 5 })).map((verdict) => verdict.kind), ['ok', 'ok', 'ok', 'ok', 'ok'])
})

test('evicted calls no longer count toward a pattern', () => {
  const loop = detector({ windowSize: 6 })
  loop.record('tool_a', { x: 1 }, 'r')
  loop.record('tool_a', { x: 1 }, 'r')
  for (let i = 0; i < 5; i++) loop.record(`other_${i}`, {}, 'ok')
  expectKind(loop.record('tool_a', { x: 1 }, 'r'), 'ok')
})

test('the args hash ignores key order', () => {
  const loop = detector()
  loop.record('t', { alpha: 1, beta: 2 }, 'r')
  loop.record('t', { beta: 2, alpha: 1 }, 'r')
  assert.match(expectKind(loop.record('t', { alpha: 1, beta: 2 }, 'r'), 'warning'), /3 times/)
})

test('the args hash ignores key order in nested objects', () => {
  const loop = detector()
  loop.record('t', { outer: { x: 1, y: 2 }, z: [1, 2] }, 'r')
  loop.record('t', { z: [1, 2], outer: { y: 2, x: 1 } }, 'r')
  expectKind(loop.record('t', { outer: { x: 1, y: 2 }, z: [1, 2] }, 'r'), 'warning')
})

test('the args hash tells strings from numbers and booleans', () => {
  for (const [first, second] of [[1, '1'], [true, 'true'], [null, 'null']]) {
    const loop = detector({ maxRepeats: 2 })
    loop.record('t', { v: first }, 'r')
    expectKind(loop.record('t', { v: second }, 'r'), 'ok')
  }
})

test('the args hash tells array orderings apart', () => {
  const loop = detector({ maxRepeats: 2 })
  loop.record('t', { list: [1, 2] }, 'r')
  expectKind(loop.record('t', { list: [2, 1] }, 'r'), 'ok')
  expectKind(loop.record('t', { list: [2, 1] }, 'r'), 'warning')
})

test('large args are hashed without failing', () => {
  const loop = detector()
  const big = { blob: 'x'.repeat(2_000_000), items: Array.from({ length: 100_000 }, (_, i) => ({ i })) }
  loop.record('t', big, 'r')
  loop.record('t', big, 'r')
  expectKind(loop.record('t', big, 'r'), 'warning')
})

test('an exact repeat takes priority over no-progress', () => {
  const loop = detector()
  loop.record('s', { q: 'other' }, 'r')
  for (let i = 0; i < 3; i++) loop.record('s', { q: 'same' }, 'r')
  assert.match(expectKind(loop.record('s', { q: 'same' }, 'r'), 'block'), /4 times in a row with identical arguments/)
})

test('a single call is never reported even with a max_repeats of one', () => {
  const loop = detector({ maxRepeats: 1 })
  expectKind(loop.record('t', { a: 1 }, 'r'), 'ok')
  expectKind(loop.record('t', { a: 1 }, 'r'), 'block')
})
