import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { TurnEvent } from '../../schemas/events.js'
import { clipUtf8, createProgressReporter } from '../../src/turn/progress.js'
import { lineProgress } from '../../src/tools/builtin/shell-progress.js'
import type { ToolProgress } from '../../src/tools/contract.js'

function reporter (limits: { maxPerSecond: number, maxPerCall: number, maxMessageBytes: number }): {
  events: Array<{ at: number, event: TurnEvent }>
  report: (u: ToolProgress) => void
  close: () => void
} {
  const events: Array<{ at: number, event: TurnEvent }> = []
  const r = createProgressReporter({ callId: 'c1', limits, emit: (event) => { events.push({ at: Date.now(), event }) } })
  return { events, report: r.report, close: r.close }
}

// The clock is mocked: the rate limit is checked against Date.now and waited out with setTimeout.
test('updates over the per-second limit are held back, and only the latest is sent once the second is over', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 })
  const r = reporter({ maxPerSecond: 2, maxPerCall: 100, maxMessageBytes: 512 })
  for (let i = 1; i <= 5; i++) r.report({ progress: i })
  assert.deepEqual(r.events.map((e) => e.event), [1, 2].map((n) => ({ kind: 'tool.progress', call_id: 'c1', progress: n })))
  t.mock.timers.tick(999)
  assert.equal(r.events.length, 2, 'nothing more inside the second')
  t.mock.timers.tick(1)
  assert.deepEqual(r.events.map((e) => e.event), [1, 2, 5].map((n) => ({ kind: 'tool.progress', call_id: 'c1', progress: n })))
  assert.ok((r.events[2]?.at ?? 0) - (r.events[0]?.at ?? 0) >= 1000)
  r.close()
})

test('closing drops a held-back update and ignores later reports', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 })
  const r = reporter({ maxPerSecond: 1, maxPerCall: 100, maxMessageBytes: 512 })
  r.report({ message: 'first' })
  r.report({ message: 'held' })
  r.close()
  r.report({ message: 'late' })
  t.mock.timers.tick(2000)
  assert.deepEqual(r.events.map((e) => e.event), [{ kind: 'tool.progress', call_id: 'c1', message: 'first' }])
})

test('a call sends at most max_events_per_call progress events', () => {
  const r = reporter({ maxPerSecond: 100, maxPerCall: 3, maxMessageBytes: 512 })
  for (let i = 1; i <= 10; i++) r.report({ progress: i, total: 10 })
  r.close()
  assert.deepEqual(r.events.map((e) => e.event.kind === 'tool.progress' ? e.event.progress : null), [1, 2, 3])
})

test('empty, non-finite and negative values are left out; an update with nothing left is not sent', () => {
  const r = reporter({ maxPerSecond: 100, maxPerCall: 100, maxMessageBytes: 512 })
  r.report({ progress: Number.NaN, total: -1, message: '  \u001b[0m ' })
  r.report({ progress: Number.POSITIVE_INFINITY, total: 3 })
  r.close()
  assert.deepEqual(r.events.map((e) => e.event), [{ kind: 'tool.progress', call_id: 'c1', total: 3 }])
})

test('a secret cut by the byte bound is scrubbed before the cut, so no part of it shows', () => {
  const r = reporter({ maxPerSecond: 100, maxPerCall: 100, maxMessageBytes: 64 })
  const secret = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'
  r.report({ message: `${'x'.repeat(50)} ${secret}` })
  r.close()
  const event = r.events[0]?.event
  const message = event?.kind === 'tool.progress' ? event.message ?? '' : ''
  assert.equal(message, `${'x'.repeat(50)} ghp_*[REDA…`)
  assert.equal(message.includes('abcdef'), false)
})

test('clipUtf8 cuts at a character boundary and marks the cut', () => {
  assert.equal(clipUtf8('short', 10), 'short')
  assert.equal(clipUtf8('ééééé', 7), 'éé…')
  assert.equal(Buffer.byteLength(clipUtf8('😀😀😀😀', 9), 'utf8') <= 9, true)
})

test('output lines split at LF, CR and CRLF per stream; an over-long line is reported cut and its rest skipped', () => {
  const lines: string[] = []
  const p = lineProgress((u) => { lines.push(u.message ?? '') }, 0)
  p.stdout(Buffer.from('a\r\nb\rc'))
  p.stderr(Buffer.from('err 1\n'))
  p.stdout(Buffer.from('\n'))
  p.stdout(Buffer.from('x'.repeat(9000)))
  p.stdout(Buffer.from('tail\nnext\n'))
  p.close()
  p.stdout(Buffer.from('after close\n'))
  assert.deepEqual(lines, ['a', 'b', 'err 1', 'c', 'x'.repeat(8192), 'next'])
})

test('lines before progress_after_ms collapse into the latest one, reported when the time is up', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] })
  const lines: string[] = []
  const p = lineProgress((u) => { lines.push(u.message ?? '') }, 100)
  p.stdout(Buffer.from('one\ntwo\nthree\n'))
  assert.deepEqual(lines, [])
  t.mock.timers.tick(100)
  p.stdout(Buffer.from('four\n'))
  p.close()
  assert.deepEqual(lines, ['three', 'four'])
})

test('the lines of a private key block are hidden from progress; the lines around it are not', () => {
  const lines: string[] = []
  const p = lineProgress((u) => { lines.push(u.message ?? '') }, 0)
  p.stdout(Buffer.from('before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQUFBQUFBQUFBQUFBQUFB\n'))
  p.stdout(Buffer.from('-----END OPENSSH PRIVATE KEY-----\nafter\n-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQ\n'))
  p.close()
  assert.deepEqual(lines, ['before', '-----BEGIN OPENSSH PRIVATE KEY-----', 'after', '-----BEGIN PUBLIC KEY-----', 'MFkwEwYHKoZIzj0CAQ'])
})

test('a reported plan is checked entry by entry: malformed entries dropped, priority medium when absent, texts cleaned and scrubbed', () => {
  const r = reporter({ maxPerSecond: 100, maxPerCall: 100, maxMessageBytes: 64 })
  r.report({
    plan: [
      { content: 'read the notes', status: 'completed', priority: 'high' },
      { content: 'write\u001b[31m the fix', status: 'in_progress' },
      { content: 'no status' },
      { content: '', status: 'pending' },
      { content: 'bad status', status: 'done' },
      'not an entry',
      { content: `deploy with ${'sk-' + 'a'.repeat(40)}`, status: 'pending', priority: 'urgent' }
    ] as never
  })
  r.close()
  const event = r.events[0]?.event
  assert.ok(event?.kind === 'tool.progress')
  assert.deepEqual(event.plan?.map((e) => [e.content.startsWith('deploy with ') ? 'deploy with …' : e.content, e.priority, e.status]), [
    ['read the notes', 'high', 'completed'], ['write the fix', 'medium', 'in_progress'], ['deploy with …', 'medium', 'pending']
  ])
  assert.doesNotMatch(JSON.stringify(event.plan), /a{40}/, 'the secret is scrubbed')
})

test('an empty plan is sent (it clears the plan); more than 50 entries are cut to 50', () => {
  const r = reporter({ maxPerSecond: 100, maxPerCall: 100, maxMessageBytes: 64 })
  r.report({ plan: [] })
  r.report({ plan: Array.from({ length: 60 }, (_, i) => ({ content: `step ${i}`, status: 'pending' as const })) })
  r.close()
  assert.deepEqual(r.events.map((e) => e.event.kind === 'tool.progress' ? e.event.plan?.length : null), [0, 50])
})

test('a held-back update keeps the plan of the held update it replaces', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 })
  const r = reporter({ maxPerSecond: 1, maxPerCall: 100, maxMessageBytes: 512 })
  r.report({ message: 'starting' })
  r.report({ plan: [{ content: 'one', status: 'in_progress' }] })
  r.report({ message: 'still going' })
  t.mock.timers.tick(1000)
  r.close()
  assert.deepEqual(r.events.map((e) => e.event), [
    { kind: 'tool.progress', call_id: 'c1', message: 'starting' },
    { kind: 'tool.progress', call_id: 'c1', message: 'still going', plan: [{ content: 'one', priority: 'medium', status: 'in_progress' }] }
  ])
})
