import { test } from 'node:test'
import assert from 'node:assert/strict'
import { RetentionQueue } from '../../src/service/retention.js'

test('a sweep expires exactly the entries whose time has come, oldest first', (t) => {
  const q = new RetentionQueue(60_000)
  t.after(() => q.close())
  const expired: string[] = []
  q.add(100, () => expired.push('a'))
  q.add(200, () => expired.push('b'))
  q.add(300, () => expired.push('c'))
  q.sweep(99)
  assert.deepEqual(expired, [])
  q.sweep(200)
  assert.deepEqual(expired, ['a', 'b'])
  assert.equal(q.size, 1)
  q.sweep(1000)
  assert.deepEqual(expired, ['a', 'b', 'c'])
  assert.equal(q.size, 0)
})

test('many expiries keep working across the internal compaction', (t) => {
  const q = new RetentionQueue(60_000)
  t.after(() => q.close())
  let count = 0
  for (let i = 0; i < 5000; i++) q.add(i, () => { count++ })
  q.sweep(2999)
  assert.equal(count, 3000)
  for (let i = 5000; i < 6000; i++) q.add(i, () => { count++ })
  assert.equal(q.size, 3000)
  q.sweep(10_000)
  assert.equal(count, 6000)
  assert.equal(q.size, 0)
})
