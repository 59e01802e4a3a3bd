/**
 * A turn that is ending has its outcome on its record while its final save is under way. Reading
 * it then must not answer "completed" before the turn has let go of its session and its slot:
 * whoever reads the outcome and starts the session's next turn at once would be refused
 * (SESSION_BUSY here; TOO_MANY_TURNS from another instance sharing Redis).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { BusEnvelope } from '../../src/core/envelope.js'
import type { SessionRecord, TurnRecord } from '../../src/store/store.js'
import { MemoryStore } from '../../src/store/memory.js'
import { startGateway } from '../helpers/gateway.js'
import { deferrer } from '../helpers/services.js'
import { gate, startTurn } from '../helpers/turns.js'

/** A memory store whose save of a finished turn waits until the test lets it go. */
class HeldFinalSave extends MemoryStore {
  readonly entered = gate()
  readonly release = gate()

  override async saveTurnAndSession (turn: TurnRecord, session: SessionRecord, events?: readonly BusEnvelope[]): Promise<void> {
    if (turn.status !== 'running') {
      this.entered.open()
      await this.release.promise
    }
    await super.saveTurnAndSession(turn, session, events)
  }
}

test('reading a turn while its final save is under way answers once it has let go of its session: the next turn starts at once', async (t) => {
  const defer = deferrer(t)
  const store = new HeldFinalSave()
  const g = await startGateway({ store })
  defer(async () => { await g.close() })
  // Run first (deferred last): a failed assertion must not leave the save, and so the close, waiting.
  defer(async () => { store.release.open() })
  g.provider.enqueue({ text: 'first answer' }, { text: 'second answer' })
  const first = await startTurn(g, { message: 'one' })
  await store.entered.promise

  // The read is watched where the route hands it to the turn service: the signal that it arrived.
  const turns = g.gateway.turns
  const get = turns.get.bind(turns)
  const arrived = gate()
  let answered = false
  turns.get = async (principal, turnId) => {
    const answer = get(principal, turnId)
    answer.then(() => { answered = true }, () => { answered = true })
    arrived.open()
    return await answer
  }
  const reading = g.http('GET', `/v1/turns/${first.turn_id}`)
  await arrived.promise
  // The ending turn is in memory, so a read that did not wait for the save would have its answer
  // within the microtasks that run before this next turn of the event loop.
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(answered, false, 'the read answered while the turn was still saving its outcome')

  store.release.open()
  const read = await reading
  assert.equal(read.status, 200)
  assert.equal(read.body.status, 'completed')
  assert.equal(read.body.final_text, 'first answer')
  const next = await g.http('POST', '/v1/turns?wait=true', { message: 'two', session_id: first.session_id })
  assert.equal(next.status, 200, JSON.stringify(next.body))
  assert.equal(next.body.status, 'completed')
  assert.equal(next.body.final_text, 'second answer')
})
