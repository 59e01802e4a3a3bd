/**
 * The stored journal over a synchronous store (SQLite) writes a finished turn's record and session
 * with its terminal event in the group of its tick: turns ending in one tick share one write, the
 * terminal events go out only after it, and a failed write falls back to saving each turn alone.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import type { BusEnvelope } from '../../src/bus/bus.js'
import { MemoryEventBus } from '../../src/bus/memory.js'
import type { CheckpointRow } from '../../src/core/envelope.js'
import { StoredJournal } from '../../src/journal/stored-journal.js'
import type { FinishedTurn, SessionRecord, Store, TurnRecord } from '../../src/store/store.js'

function closing (turnId: string, seq: number): BusEnvelope {
  return { turn_id: turnId, session_id: `ses_${turnId}`, tenant: 'local', seq, ts: new Date().toISOString(), event: { kind: 'turn.completed', final_text: 'done' } }
}

function finished (turnId: string): FinishedTurn {
  const at = new Date().toISOString()
  const turn = {
    turn_id: turnId, session_id: `ses_${turnId}`, agent: 'default', owner: 'local', status: 'completed', created_at: at, updated_at: at,
    iterations: 1, tool_calls: [], approvals: [], pending_approvals: [], last_seq: 2, receipt_key_id: 'k'
  } as unknown as TurnRecord
  const session = { session_id: `ses_${turnId}`, owner: 'local', agent: 'default', history: [], turn_ids: [turnId] } as unknown as SessionRecord
  return { turn, session }
}

interface Recorded { events: string[], checkpoints: number, finished: string[] }

function syncStore (options: { failWrites: boolean }): { store: Store, writes: Recorded[], ownSaves: string[] } {
  const writes: Recorded[] = []
  const ownSaves: string[] = []
  const store = {
    appendEvents: async () => { throw new Error('unreachable') },
    appendEventsNow: (events: readonly BusEnvelope[], checkpoints: readonly CheckpointRow[] = [], done: readonly FinishedTurn[] = []) => {
      if (options.failWrites) throw new Error('disk full')
      writes.push({ events: events.map((e) => `${e.turn_id}:${e.seq}`), checkpoints: checkpoints.length, finished: done.map((f) => f.turn.turn_id) })
    },
    saveTurnAndSession: async (turn: TurnRecord) => { ownSaves.push(turn.turn_id) },
    readEvents: async () => [],
    lastEventSeq: async () => 0
  } as unknown as Store
  return { store, writes, ownSaves }
}

function journalOver (store: Store): { journal: StoredJournal, seen: string[] } {
  const bus = new MemoryEventBus({ maxEventsPerTurn: 100, onListenerError: (err) => { throw err } })
  const journal = new StoredJournal({ bus, store, log: pino({ level: 'silent' }), maxEventsPerTurn: 100, maxBuffered: 100 })
  const seen: string[] = []
  for (const id of ['turn_a', 'turn_b']) bus.subscribeTurn(id, (e) => { seen.push(`${e.turn_id}:${e.seq}`) })
  return { journal, seen }
}

test('two turns ending in one tick are saved in one write with their last events, and their terminal events go out after it', async (t) => {
  const { store, writes } = syncStore({ failWrites: false })
  const { journal, seen } = journalOver(store)
  t.after(async () => { await journal.close() })

  // turn_a's answer text of this tick is still unwritten when it ends.
  journal.append({ ...closing('turn_a', 1), event: { kind: 'text.delta', text: 'done' } })
  const a = journal.finish(finished('turn_a'), closing('turn_a', 2))
  const b = journal.finish(finished('turn_b'), closing('turn_b', 1))
  assert.ok(a !== null && b !== null, 'a journal over a synchronous store takes the final saves')
  await Promise.resolve()
  assert.deepEqual([writes, seen], [[], []], 'nothing is written or sent before the end of the tick')
  await Promise.all([a, b])
  assert.deepEqual(writes, [{ events: ['turn_a:1', 'turn_a:2', 'turn_b:1'], checkpoints: 0, finished: ['turn_a', 'turn_b'] }])
  assert.deepEqual(seen, ['turn_a:1', 'turn_a:2', 'turn_b:1'])
})

test('when the shared write fails, each finished turn is saved on its own and its terminal event still goes out', async (t) => {
  const { store, writes, ownSaves } = syncStore({ failWrites: true })
  const { journal, seen } = journalOver(store)
  t.after(async () => { await journal.close() })

  await Promise.all([journal.finish(finished('turn_a'), closing('turn_a', 1)), journal.finish(finished('turn_b'), closing('turn_b', 1))])
  assert.deepEqual(writes, [])
  assert.deepEqual(ownSaves, ['turn_a', 'turn_b'])
  assert.deepEqual(seen, ['turn_a:1', 'turn_b:1'])
})

test('a journal over an asynchronous store leaves the final save to the turn', async (t) => {
  const store = { appendEvents: async () => {}, readEvents: async () => [], lastEventSeq: async () => 0 } as unknown as Store
  const { journal } = journalOver(store)
  t.after(async () => { await journal.close() })
  assert.equal(journal.finish(finished('turn_a'), closing('turn_a', 1)), null)
})
