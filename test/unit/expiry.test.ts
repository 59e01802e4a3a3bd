import { test } from 'node:test'
import assert from 'node:assert/strict'
import { whenExpired } from '../../src/auth/expiry.js'

test('an already expired credential fires at once', () => {
  let fired = 0
  whenExpired(1000, () => { fired++ }, () => 2000)
  assert.equal(fired, 1)
})

test('a credential fires exactly when its time has come, also after re-arming past the timer range', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 })
  const day = 24 * 3600 * 1000
  let fired = 0
  whenExpired(30 * day, () => { fired++ })
  t.mock.timers.tick(30 * day - 1)
  assert.equal(fired, 0)
  t.mock.timers.tick(1)
  assert.equal(fired, 1)
})

test('stopping the watch prevents the callback', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 })
  let fired = 0
  const stop = whenExpired(1000, () => { fired++ })
  stop()
  t.mock.timers.tick(5000)
  assert.equal(fired, 0)
})
