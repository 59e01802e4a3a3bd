import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import type { BusEnvelope, ControlMessage } from '../../src/bus/bus.js'
import { RedisEventBus } from '../../src/bus/redis.js'
import { followTurn } from '../../src/transport/follow.js'
import { deferrer, REDIS_URL, scratchPrefix, startPrivateRedis, type Defer } from '../helpers/services.js'
import { eventually } from '../helpers/eventually.js'

async function openBus (defer: Defer, prefix: string, url = REDIS_URL): Promise<RedisEventBus> {
  const bus = await RedisEventBus.connect({
    url, keyPrefix: prefix, maxEventsPerTurn: 1000, streamTtlMs: 60_000, maxBufferedEvents: 10_000, connectTimeoutMs: 2000,
    log: pino({ level: 'silent' }), onListenerError: (err) => { throw err }
  })
  defer(async () => { await bus.close() })
  return bus
}

function envelope (seq: number, kind: 'text.delta' | 'turn.completed' = 'text.delta'): BusEnvelope {
  const event = kind === 'text.delta' ? { kind, text: `piece ${seq}` } as const : { kind, final_text: 'done' } as const
  return { turn_id: 'turn_r', session_id: 'ses_r', tenant: 'local', seq, ts: new Date().toISOString(), event }
}

/** Follows turn_r on `bus` from `afterSeq`; resolves with every delivered seq once `until` arrived. */
async function follow (bus: RedisEventBus, afterSeq: number, until: number): Promise<{ seqs: number[], done: Promise<void> }> {
  const seqs: number[] = []
  let resolveDone!: () => void
  const done = new Promise<void>((resolve) => { resolveDone = resolve })
  const result = await followTurn({
    bus,
    // No store behind it: the bus's own replay.
    journal: bus,
    turnId: 'turn_r',
    afterSeq,
    knownLastSeq: 0,
    deliver: (e) => {
      seqs.push(e.seq)
      if (e.seq >= until) resolveDone()
    }
  })
  assert.equal(result.kind, 'following')
  if (seqs.at(-1) !== undefined && (seqs.at(-1) ?? 0) >= until) resolveDone()
  return { seqs, done }
}

async function within<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`timed out waiting for ${what}`)) }, ms) })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

async function streamSeqs (bus: RedisEventBus): Promise<number[]> {
  const replay = await bus.replay('turn_r', 0)
  return replay.kind === 'events' ? replay.events.map((e) => e.seq) : []
}

test('a follower on another instance replays a turn and then follows it live with no gap or duplicate', async (t) => {
  const defer = deferrer(t)
  const prefix = scratchPrefix(defer)
  const a = await openBus(defer, prefix)
  const b = await openBus(defer, prefix)
  for (const seq of [1, 2, 3]) a.publish(envelope(seq))
  await eventually(async () => (await streamSeqs(b)).length >= 3, { what: 'the stream', timeoutMs: 5000 })
  const followed = await follow(b, 1, 6)
  for (const seq of [4, 5]) a.publish(envelope(seq))
  a.publish(envelope(6, 'turn.completed'))
  await within(followed.done, 5000, 'live events')
  assert.deepEqual(followed.seqs, [2, 3, 4, 5, 6])
  assert.equal(await b.lastSeq('turn_r'), 6)
})

test('a follower fills a hole from the stream when a live message never reached it', async (t) => {
  const defer = deferrer(t)
  const prefix = scratchPrefix(defer)
  const a = await openBus(defer, prefix)
  const b = await openBus(defer, prefix)
  const followed = await follow(b, 0, 3)
  a.publish(envelope(1))
  // Seq 2 lands in the stream without its pub/sub message, as around a subscriber reconnect.
  const raw = new Redis(REDIS_URL)
  defer(async () => { raw.disconnect() })
  await eventually(async () => (await streamSeqs(b)).length >= 1, { what: 'seq 1', timeoutMs: 5000 })
  await raw.xadd(`${prefix}log:turn_r`, '0-2', 'e', JSON.stringify(envelope(2)))
  a.publish(envelope(3))
  await within(followed.done, 5000, 'the filled hole')
  assert.deepEqual(followed.seqs, [1, 2, 3])
})

test('a control message published on one instance reaches the others', async (t) => {
  const defer = deferrer(t)
  const prefix = scratchPrefix(defer)
  const a = await openBus(defer, prefix)
  const b = await openBus(defer, prefix)
  const received = new Promise<ControlMessage>((resolve) => { b.onControl(resolve) })
  a.publishControl({ type: 'cancel', turn_id: 'turn_r', principal: 'local/local', reason: 'test' })
  assert.deepEqual(await within(received, 5000, 'the control message'), { type: 'cancel', turn_id: 'turn_r', principal: 'local/local', reason: 'test' })
})

test('events published while Redis restarts empty reach a follower on another instance, and the stream is rebuilt', async (t) => {
  const defer = deferrer(t)
  const redis = await startPrivateRedis(defer)
  const prefix = scratchPrefix(defer, redis.url)
  const a = await openBus(defer, prefix, redis.url)
  const b = await openBus(defer, prefix, redis.url)
  const followed = await follow(b, 0, 5)
  a.publish(envelope(1))
  a.publish(envelope(2))
  await eventually(async () => followed.seqs.length >= 2, { what: 'the first events', timeoutMs: 5000 })
  await redis.kill()
  a.publish(envelope(3))
  a.publish(envelope(4))
  await redis.start()
  a.publish(envelope(5, 'turn.completed'))
  await within(followed.done, 15_000, 'the events after the restart')
  assert.deepEqual(followed.seqs, [1, 2, 3, 4, 5])
  await eventually(async () => (await streamSeqs(b)).length >= 5, { what: 'the rebuilt stream', timeoutMs: 10_000 })
  assert.deepEqual(await streamSeqs(b), [1, 2, 3, 4, 5])
})
