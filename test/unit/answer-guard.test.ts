import { test } from 'node:test'
import assert from 'node:assert/strict'
import { AnswerGuard, withdrawalText } from '../../client/answer-guard.js'

const MESSAGE = { kind: 'message' } as const

test('a line entered inside the guard window after a withdrawal is swallowed, saying why, at any prompt', () => {
  const guard = new AnswerGuard(1000)
  guard.withdraw('risky', { kind: 'expired' }, 10_000)
  assert.equal(guard.check('n', 10_400, MESSAGE), '(ignored "n": the question about risky was withdrawn a moment before, ' +
    'because it expired unanswered (the call was denied); nothing was sent)')
  assert.match(guard.check('hello there', 10_999, { kind: 'answer', shownAt: 0 }) ?? '', /^\(ignored "hello there": .*expired/)
})

test('after the window the first answer-shaped line at the message prompt is held back once; typing it again sends it', () => {
  const guard = new AnswerGuard(1000)
  guard.withdraw('shell', { kind: 'answered', decision: 'yes', by: 'rest:acme/alice' }, 0)
  assert.equal(guard.check('Always', 5000, MESSAGE),
    '(not sent: "Always" looks like an answer to the question about shell, which was withdrawn because it was answered yes by ' +
    'rest:acme/alice; type it again to send it as a message)')
  assert.equal(guard.check('Always', 6000, MESSAGE), null)
})

test('a line that does not look like an answer disarms the hold-back and is sent', () => {
  const guard = new AnswerGuard(1000)
  guard.withdraw('risky', { kind: 'turn-cancelled' }, 0)
  assert.equal(guard.check('what happened?', 5000, MESSAGE), null)
  assert.equal(guard.check('y', 6000, MESSAGE), null)
})

test('a new question takes answers only once it has been on screen for the guard; a new question disarms the hold-back', () => {
  const guard = new AnswerGuard(1500)
  guard.withdraw('risky', { kind: 'expired' }, 0)
  guard.questionShown()
  const target = { kind: 'answer', shownAt: 10_000 } as const
  assert.equal(guard.check('y', 9_000, target),
    '(ignored "y": it was typed before this question had been on screen for 1500 ms; read it, then answer)')
  assert.match(guard.check('y', 11_499, target) ?? '', /before this question had been on screen/)
  assert.equal(guard.check('y', 11_500, target), null)
  assert.equal(guard.check('n', 20_000, MESSAGE), null, 'the question shown since took the hold-back away')
})

test('with a guard of 0 (piped input) only the hold-back applies: lines typed ahead answer at once', () => {
  const guard = new AnswerGuard(0)
  assert.equal(guard.check('y', 5, { kind: 'answer', shownAt: 10 }), null)
  guard.withdraw('risky', { kind: 'expired' }, 20)
  assert.match(guard.check('n', 20, MESSAGE) ?? '', /^\(not sent: "n" looks like an answer/)
})

test('every withdrawal reason reads as what happened', () => {
  assert.deepEqual([
    withdrawalText({ kind: 'expired' }),
    withdrawalText({ kind: 'answered', decision: 'no', by: 'ws:ws_1' }),
    withdrawalText({ kind: 'auto-denied' }),
    withdrawalText({ kind: 'turn-cancelled' }),
    withdrawalText({ kind: 'turn-ended', outcome: 'failed' }),
    withdrawalText({ kind: 'lost' })
  ], [
    'it expired unanswered (the call was denied)',
    'it was answered no by ws:ws_1',
    'the runtime denied it (no one could be asked)',
    'the turn was cancelled',
    'the turn ended (failed)',
    'this client lost the turn\'s events'
  ])
})
