/**
 * A durable turn's checkpoints as its loop reaches its safe points, without a gateway: a
 * checkpoint that cannot be made never ends the turn: it is logged and counted, and the turn goes
 * on from its last good one.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { decodeCheckpoint, TurnCheckpointer, type TurnKnobs } from '../../src/service/checkpoint.js'
import { runToolLoop } from '../../src/turn/loop.js'
import { UsageTally } from '../../src/turn/usage.js'
import { createEngine, shape } from './harness.js'

const KNOBS: TurnKnobs = { message: 'go', interactive: true, detach: false, owned: false, channel: 'engine', tenant: 'local', history_base: 0 }

test('a checkpoint that cannot be made is counted, and the turn goes on to complete', async (t) => {
  // A hook hands the call arguments JSON has no text for: the round's checkpoint cannot be serialised.
  const e = await createEngine(t, {
    hooks: { before: [{ name: 'sizes', run: (call) => ({ action: 'continue', arguments: { ...call.arguments, label: 10n } }) }], after: [] }
  })
  const staged: string[] = []
  const running = { parkRequested: false, stageCheckpoint: (doc: string) => { staged.push(doc) }, written: async () => {} }
  const checkpointer = new TurnCheckpointer(running, KNOBS, new UsageTally())
  checkpointer.attach(e.exec, e.state)
  e.provider.enqueue({ toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'a' } }] }, { text: 'done' })
  e.state.history.push({ role: 'user', content: 'go' })

  const outcome = await runToolLoop(e.exec, e.state, { checkpoints: checkpointer.loop })
  assert.deepEqual(outcome, { status: 'completed', finalText: 'done' })
  assert.deepEqual(shape(e.events), ['iteration', 'tool_call:probe', 'tool_result:probe:error', 'iteration'])
  const failed = e.observed.filter((o) => o.kind === 'checkpoint_failed')
  assert.deepEqual(failed, [{ kind: 'checkpoint_failed', step: 'dispatch', turn_id: 'turn_engine', session_id: 'ses_engine', agent: 'default', channel: 'engine' }])
  // The checkpoints around it were made: each model call's.
  assert.deepEqual(staged.map((doc) => [decodeCheckpoint(doc)?.step, decodeCheckpoint(doc)?.iteration]), [['model', 1], ['model', 2]])
})
