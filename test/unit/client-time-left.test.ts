import { test } from 'node:test'
import assert from 'node:assert/strict'
import { timeLeft } from '@tollgate/client'

const AT = '2026-01-01T12:00:00.000Z'
const T = Date.parse(AT)

test('the approval countdown shows minutes and seconds, hours past an hour, and expired once the time has passed', () => {
  assert.deepEqual(timeLeft(AT, T - 119_001), { text: 'expires in 2:00', expired: false })
  assert.deepEqual(timeLeft(AT, T - 61_000), { text: 'expires in 1:01', expired: false })
  assert.deepEqual(timeLeft(AT, T - 500), { text: 'expires in 0:01', expired: false })
  assert.deepEqual(timeLeft(AT, T - (2 * 3600 + 3 * 60) * 1000), { text: 'expires in 2 h 03 min', expired: false })
  assert.deepEqual(timeLeft(AT, T), { text: 'expired', expired: true })
  assert.deepEqual(timeLeft('not a time', T), { text: 'expiry unknown', expired: false })
})
