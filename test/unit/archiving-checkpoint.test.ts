/**
 * The archiving bus with an asynchronous store (PostgreSQL): a group that carries a durable
 * turn's checkpoint reaches subscribers only once the store has it, and later groups wait behind
 * it; groups without one go out at once.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { ArchivingBus } from '../../src/bus/archiving.js'
import type { BusEnvelope } from '../../src/bus/bus.js'
import { MemoryEventBus } from '../../src/bus/memory.js'
import type { CheckpointRow } from '../../src/core/envelope.js'
import type { Store } from '../../src/store/store.js'

function envelope (seq: number): BusEnvelope {
  return { turn_id: 'turn_1', session_id: 'ses_1', seq, ts: new Date().toISOString(), event: { kind: 'iteration', n: seq } }
}

/** A store whose writes complete when the test says so. */
function gatedStore (): { store: Store, writes: Array<{ seqs: number[], checkpoints: number[], done: () => void }> } {
  const writes: Array<{ seqs: number[], checkpoints: number[], done: () => void }> = []
  const store = {
    appendEvents: async (events: readonly BusEnvelope[], checkpoints: readonly CheckpointRow[] = []) => {
      await new Promise<void>((resolve) => {
        writes.push({ seqs: events.map((e) => e.seq), checkpoints: checkpoints.map((c) => c.seq), done: resolve })
      })
    },
    readEvents: async () => [],
    lastEventSeq: async () => 0
  } as unknown as Store
  return { store, writes }
}

const tick = async (): Promise<void> => { await new Promise((resolve) => setImmediate(resolve)) }

test('with an asynchronous store a checkpoint\'s group and every later one wait for the store; earlier ones do not', async (t) => {
  const { store, writes } = gatedStore()
  const inner = new MemoryEventBus({ maxEventsPerTurn: 100, onListenerError: (err) => { throw err } })
  const bus = new ArchivingBus({ inner, store, log: pino({ level: 'silent' }), maxEventsPerTurn: 100, maxBuffered: 100 })
  t.after(async () => {
    for (const w of writes) w.done()
    await bus.close()
  })
  const seen: number[] = []
  bus.subscribeTurn('turn_1', (e) => { seen.push(e.seq) })

  bus.publish(envelope(1))
  await tick()
  assert.deepEqual(seen, [1], 'a group without a checkpoint goes out at once')
  bus.publish(envelope(2))
  bus.checkpoint({ turn_id: 'turn_1', seq: 2, doc: '{}' })
  await tick()
  bus.publish(envelope(3))
  await tick()
  assert.deepEqual(seen, [1], 'held while the store writes the checkpoint')
  writes[0]?.done()
  await tick()
  assert.deepEqual(seen, [1], 'the checkpoint is in a later write than the first group')
  assert.deepEqual(writes.map((w) => [w.seqs, w.checkpoints]), [[[1], []], [[2, 3], [2]]])
  writes[1]?.done()
  await tick()
  assert.deepEqual(seen, [1, 2, 3])
})
