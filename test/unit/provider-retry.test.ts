import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseRetryAfter, retryDelay, type RetryPolicy } from '../../src/providers/retry.js'

const POLICY: RetryPolicy = { maxRetries: 2, initialDelayMs: 500, maxDelayMs: 8000 }

test('Retry-After is read as delta-seconds or as an HTTP date, and ignored when unreadable', () => {
  const now = Date.parse('2026-01-01T00:00:00Z')
  assert.equal(parseRetryAfter('3', now), 3000)
  assert.equal(parseRetryAfter(['7', '9'], now), 7000)
  assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now), 5000)
  assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:59:00 GMT', now), 0)
  for (const bad of [undefined, '', 'soon', '-1', '1.5']) assert.equal(parseRetryAfter(bad, now), undefined, String(bad))
})

test('backoff doubles per retry, is jittered to 50-100 % and capped', () => {
  assert.deepEqual([0, 1].map((r) => retryDelay(POLICY, r, undefined, () => 0)), [250, 500])
  assert.deepEqual([0, 1].map((r) => retryDelay(POLICY, r, undefined, () => 1)), [500, 1000])
  assert.equal(retryDelay({ ...POLICY, maxRetries: 5 }, 4, undefined, () => 1), 8000)
})

test('no delay is given once max_retries retries were made', () => {
  assert.equal(retryDelay(POLICY, 2, undefined), null)
  assert.equal(retryDelay({ ...POLICY, maxRetries: 0 }, 0, undefined), null)
})

test('a Retry-After is a minimum wait, and one beyond the cap ends the retries', () => {
  assert.equal(retryDelay(POLICY, 0, 3000, () => 1), 3000)
  assert.equal(retryDelay(POLICY, 0, 100, () => 1), 500)
  assert.equal(retryDelay(POLICY, 0, 8001), null)
})
