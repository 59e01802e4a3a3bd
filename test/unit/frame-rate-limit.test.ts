import { test } from 'node:test'
import assert from 'node:assert/strict'
import { FrameRateLimiter } from '../../src/core/security/frame-rate-limit.js'

function limiter (perSecond: number, burst: number, maxRejected: number): { take: () => string, advance: (ms: number) => void } {
  let now = 0
  const l = new FrameRateLimiter({ perSecond, burst, maxRejected, now: () => now })
  return { take: () => l.take(), advance: (ms) => { now += ms } }
}

test('a burst of frames up to the bucket size is accepted and the next one is rejected', () => {
  const l = limiter(10, 3, 5)
  assert.deepEqual([l.take(), l.take(), l.take(), l.take()], ['accept', 'accept', 'accept', 'reject'])
})

test('tokens refill at the configured rate', () => {
  const l = limiter(10, 2, 5)
  l.take()
  l.take()
  assert.equal(l.take(), 'reject')
  l.advance(100)
  assert.equal(l.take(), 'accept')
  assert.equal(l.take(), 'reject')
})

test('the bucket never holds more than its burst, however long the socket was idle', () => {
  const l = limiter(10, 2, 5)
  l.advance(60_000)
  assert.deepEqual([l.take(), l.take(), l.take()], ['accept', 'accept', 'reject'])
})

test('a client that keeps sending after refusals is told to close once refusals exceed the limit', () => {
  const l = limiter(1, 1, 2)
  assert.deepEqual([l.take(), l.take(), l.take(), l.take()], ['accept', 'reject', 'reject', 'close'])
})

test('refusals are forgiven over time, so an occasional overshoot never closes the socket', () => {
  const l = limiter(1, 1, 2)
  for (let round = 0; round < 20; round++) {
    assert.equal(l.take(), 'accept')
    assert.equal(l.take(), 'reject')
    l.advance(2000)
  }
})
