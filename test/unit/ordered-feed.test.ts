import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { BusEnvelope } from '../../src/bus/bus.js'
import { OrderedFeed, type OrderedFeedOptions } from '../../src/bus/ordered-feed.js'
import { eventually } from '../helpers/eventually.js'

function envelope (seq: number): BusEnvelope {
  return { turn_id: 'turn_f', session_id: 'ses_f', tenant: 'local', seq, ts: '2026-01-01T00:00:00.000Z', event: { kind: 'text.delta', text: String(seq) } }
}

function feed (over: Partial<OrderedFeedOptions> = {}): { feed: OrderedFeed, delivered: number[], holes: Array<[number, number]> } {
  const delivered: number[] = []
  const holes: Array<[number, number]> = []
  const f = new OrderedFeed({
    deliver: (e) => { delivered.push(e.seq) },
    fetch: async () => [],
    retryMs: 5,
    giveUpMs: 10_000,
    maxHeld: 100,
    onHole: (from, to) => { holes.push([from, to]) },
    ...over
  })
  return { feed: f, delivered, holes }
}

test('events offered twice or out of order are delivered once, in seq order', () => {
  const { feed: f, delivered } = feed()
  f.start(0)
  for (const seq of [1, 3, 2, 2, 1, 4, 3]) f.offer(envelope(seq))
  assert.deepEqual(delivered, [1, 2, 3, 4])
  f.close()
})

test('events offered before the start position is known wait, and those at or below it are dropped', () => {
  const { feed: f, delivered } = feed()
  for (const seq of [2, 3, 4]) f.offer(envelope(seq))
  assert.deepEqual(delivered, [])
  f.start(2)
  assert.deepEqual(delivered, [3, 4])
  f.close()
})

test('a hole is filled from the shared log before later events are delivered', async () => {
  const log = [1, 2, 3, 4, 5].map(envelope)
  const { feed: f, delivered } = feed({ fetch: async (afterSeq) => log.filter((e) => e.seq > afterSeq) })
  f.start(1)
  f.offer(envelope(5))
  await eventually(() => delivered.length === 4, { what: '4 deliveries' })
  assert.deepEqual(delivered, [2, 3, 4, 5])
  f.close()
})

test('a catch-up after a reconnect delivers what was missed although nothing arrived out of order', async () => {
  const log = [1, 2, 3].map(envelope)
  const { feed: f, delivered } = feed({ fetch: async (afterSeq) => log.filter((e) => e.seq > afterSeq) })
  f.start(1)
  f.catchUp()
  await eventually(() => delivered.length === 2, { what: '2 deliveries' })
  assert.deepEqual(delivered, [2, 3])
  f.close()
})

test('a hole nobody can fill is reported and skipped after the give-up time, never delivered out of order', async () => {
  const { feed: f, delivered, holes } = feed({ giveUpMs: 30 })
  f.start(0)
  f.offer(envelope(1))
  f.offer(envelope(4))
  f.offer(envelope(5))
  assert.deepEqual(delivered, [1])
  await eventually(() => delivered.length === 3, { what: '3 deliveries' })
  assert.deepEqual(delivered, [1, 4, 5])
  assert.deepEqual(holes, [[2, 3]])
  f.close()
})

test('a closed feed delivers nothing more', () => {
  const { feed: f, delivered } = feed()
  f.start(0)
  f.close()
  f.offer(envelope(1))
  assert.deepEqual(delivered, [])
})
