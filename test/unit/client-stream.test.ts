import { test } from 'node:test'
import assert from 'node:assert/strict'
import { TollgateClientError, TurnStream, type EventEnvelope, type TurnEvent } from '@tollgate/client'

function envelope (seq: number, event: TurnEvent = { kind: 'text.delta', text: `t${seq}` }): EventEnvelope {
  return { turn_id: 'turn_1', seq, ts: '2026-01-01T00:00:00.000Z', event }
}

const completed: TurnEvent = { kind: 'turn.completed', final_text: 'done' }

test('a turn stream takes each seq once and in order, and reports duplicates and gaps instead of taking them', () => {
  const stream = new TurnStream('turn_1')
  assert.equal(stream.offer(envelope(1)), 'accepted')
  assert.equal(stream.offer(envelope(1)), 'duplicate')
  assert.equal(stream.offer(envelope(3)), 'gap')
  assert.equal(stream.offer(envelope(2)), 'accepted')
  assert.equal(stream.offer(envelope(3)), 'accepted')
  assert.deepEqual(stream.events.map((e) => e.seq), [1, 2, 3])
  assert.equal(stream.lastSeq, 3)
})

test('a stream subscribed after a seq starts right after it', () => {
  const stream = new TurnStream('turn_1', 5)
  assert.equal(stream.offer(envelope(5)), 'duplicate')
  assert.equal(stream.offer(envelope(7)), 'gap')
  assert.equal(stream.offer(envelope(6)), 'accepted')
  assert.equal(stream.lastSeq, 6)
})

test('every iterator of a stream sees all its events and ends at the terminal event', async () => {
  const stream = new TurnStream('turn_1')
  const early = (async () => { const seqs: number[] = []; for await (const e of stream) seqs.push(e.seq); return seqs })()
  stream.offer(envelope(1))
  stream.offer(envelope(2))
  stream.offer(envelope(3, completed))
  assert.equal(stream.offer(envelope(4)), 'duplicate', 'nothing after the terminal event')
  const late: number[] = []
  for await (const e of stream.from(1)) late.push(e.seq)
  assert.deepEqual(await early, [1, 2, 3])
  assert.deepEqual(late, [2, 3])
  assert.equal((await stream.done()).event.kind, 'turn.completed')
})

test('a failed stream ends its iterators and done() with the failure', async () => {
  const stream = new TurnStream('turn_1')
  stream.offer(envelope(1))
  // eslint-disable-next-line @typescript-eslint/no-unused-vars -- draining only
  const reading = (async () => { for await (const _e of stream) { /* drain */ } })()
  stream.fail(new TollgateClientError('REPLAY_GAP', 'gone'))
  await assert.rejects(reading, { code: 'REPLAY_GAP' })
  await assert.rejects(stream.done(), { code: 'REPLAY_GAP' })
  assert.equal(stream.live, false)
})
