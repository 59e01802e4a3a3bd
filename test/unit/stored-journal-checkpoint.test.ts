/**
 * The stored journal and durable turns' checkpoints. With an asynchronous store (PostgreSQL): a
 * group that carries a checkpoint reaches subscribers only once the store has it, and later
 * groups wait behind it; groups without one go out at once. With a synchronous store (SQLite):
 * turns waiting for their checkpoints in one tick share the write at its end.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import type { BusEnvelope } from '../../src/bus/bus.js'
import { MemoryEventBus } from '../../src/bus/memory.js'
import type { CheckpointRow } from '../../src/core/envelope.js'
import { StoredJournal } from '../../src/journal/stored-journal.js'
import type { Store } from '../../src/store/store.js'

function envelope (seq: number): BusEnvelope {
  return { turn_id: 'turn_1', session_id: 'ses_1', tenant: 'local', seq, ts: new Date().toISOString(), event: { kind: 'iteration', n: seq } }
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
  const bus = new MemoryEventBus({ maxEventsPerTurn: 100, onListenerError: (err) => { throw err } })
  const journal = new StoredJournal({ bus, store, log: pino({ level: 'silent' }), maxEventsPerTurn: 100, maxBuffered: 100 })
  t.after(async () => {
    for (const w of writes) w.done()
    await journal.close()
  })
  const seen: number[] = []
  bus.subscribeTurn('turn_1', (e) => { seen.push(e.seq) })

  journal.append(envelope(1))
  await tick()
  assert.deepEqual(seen, [1], 'a group without a checkpoint goes out at once')
  journal.append(envelope(2))
  journal.checkpoint({ turn_id: 'turn_1', seq: 2, doc: '{}' })
  await tick()
  journal.append(envelope(3))
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

test('with a synchronous store the turns that wait for their checkpoints in one tick share one write, and none goes on before it', async (t) => {
  const writes: Array<{ seqs: string[], checkpoints: string[] }> = []
  const store = {
    appendEvents: async () => { throw new Error('a synchronous store is written through appendEventsNow') },
    appendEventsNow: (events: readonly BusEnvelope[], checkpoints: readonly CheckpointRow[] = []) => {
      writes.push({ seqs: events.map((e) => `${e.turn_id}:${e.seq}`), checkpoints: checkpoints.map((c) => `${c.turn_id}:${c.seq}`) })
    },
    readEvents: async () => [],
    lastEventSeq: async () => 0
  } as unknown as Store
  const bus = new MemoryEventBus({ maxEventsPerTurn: 100, onListenerError: (err) => { throw err } })
  const journal = new StoredJournal({ bus, store, log: pino({ level: 'silent' }), maxEventsPerTurn: 100, maxBuffered: 100 })
  t.after(async () => { await journal.close() })

  const waited: string[] = []
  const reach = async (turnId: string): Promise<void> => {
    journal.append({ ...envelope(1), turn_id: turnId })
    journal.checkpoint({ turn_id: turnId, seq: 1, doc: '{}' })
    await journal.written()
    // What a durable turn does next (runs its tools) comes only after its checkpoint is written.
    waited.push(`${turnId} after ${writes.length} write(s)`)
  }
  const both = Promise.all([reach('turn_a'), reach('turn_b')])
  await Promise.resolve()
  assert.deepEqual(writes, [], 'nothing is written before the end of the tick')
  await both
  assert.deepEqual(writes, [{ seqs: ['turn_a:1', 'turn_b:1'], checkpoints: ['turn_a:1', 'turn_b:1'] }])
  assert.deepEqual(waited, ['turn_a after 1 write(s)', 'turn_b after 1 write(s)'])
})
