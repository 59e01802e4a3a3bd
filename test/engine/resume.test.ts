/**
 * The engine's way back in after a restart, without a gateway: a loop stopped at a safe point
 * leaves its round in the cursor; resumed there with what the log says of each call, it takes
 * finished results as logged, records a call that was running as interrupted (never running it
 * again), runs the calls that had not started, and tells the model.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { LoopCheckpoints, LoopCursor, RecoveredCall } from '../../src/turn/cursor.js'
import { runToolLoop } from '../../src/turn/loop.js'
import { RESTART_INTERRUPTED_TEXT } from '../../src/turn/results.js'
import { createEngine, shape, toolMessages } from './harness.js'

const call = (id: string, label: string) => ({ id, name: 'probe', arguments: { label } })

/** Safe points the test watches; `stopAt` makes the loop stop there, as a stopping gateway does. */
function checkpoints (stopAt: 'model' | 'dispatch' | null): LoopCheckpoints & { reachedPoints: string[] } {
  const cursor: LoopCursor = { step: 'model', malformed: 0, round: null }
  const reachedPoints: string[] = []
  return {
    cursor,
    reachedPoints,
    reached: (point) => {
      reachedPoints.push(point)
      return point !== stopAt
    },
    stopping: () => stopAt === 'model',
    stored: async () => {}
  }
}

test('a loop stopped before dispatch runs nothing; resumed with the log, it keeps logged results, interrupts the started call and runs the rest once', async (t) => {
  const e = await createEngine(t)
  e.provider.enqueue({ toolCalls: [call('a', 'one'), call('b', 'two'), call('c', 'three')] }, { text: 'all settled' })
  const first = checkpoints('dispatch')
  e.state.history.push({ role: 'user', content: 'go' })
  assert.deepEqual(await runToolLoop(e.exec, e.state, { checkpoints: first }), { status: 'parked' })
  assert.deepEqual(first.reachedPoints, ['model', 'dispatch'])
  assert.equal(e.probes.runs.length, 0, 'nothing ran before the stop')
  const round = first.cursor.round
  assert.ok(round !== null)
  assert.deepEqual(round.slots.map((s) => [s.name, s.tool?.name ?? null, s.prefill]), [['probe', 'probe', null], ['probe', 'probe', null], ['probe', 'probe', null]])

  // What the log showed after the checkpoint when the process died: a finished, b running.
  const [a, b] = round.slots
  const recovered = new Map<string, RecoveredCall>([
    [a?.callId ?? '', { kind: 'settled', status: 'ok', success: true, output: 'done one (logged)', error: null, receipt: null, durationMs: 4 }],
    [b?.callId ?? '', { kind: 'started', announced: true }]
  ])
  e.events.length = 0
  const second = checkpoints(null)
  const outcome = await runToolLoop(e.exec, e.state, { checkpoints: second, entry: { step: 'dispatch', iteration: 1, malformed: 0, round, recovered } })
  assert.deepEqual(outcome, { status: 'completed', finalText: 'all settled' })
  assert.deepEqual(e.probes.runs.map((r) => r.label), ['three'], 'only the call that had not started ran')
  assert.deepEqual(shape(e.events), ['tool_result:probe:interrupted', 'tool_call:probe', 'tool_result:probe:ok', 'iteration'])
  assert.deepEqual(toolMessages(e.provider, 1).map((m) => [m.tool_call_id, m.content]), [
    ['a', 'done one (logged)'], ['b', RESTART_INTERRUPTED_TEXT], ['c', 'done three']
  ])
  assert.deepEqual(second.reachedPoints, ['model'], 'the resumed round is not checkpointed again: its checkpoint still tells what ran')
  assert.deepEqual(e.toolCalls.map((r) => [r.provider_call_id, r.status]).sort(), [['a', 'ok'], ['b', 'interrupted'], ['c', 'ok']])
})

test('a loop stopped at a model call resumes there without a second iteration event, and the history it sends is the same', async (t) => {
  const e = await createEngine(t)
  e.provider.enqueue({ text: 'hello' })
  const first = checkpoints('model')
  e.state.history.push({ role: 'user', content: 'hi' })
  assert.deepEqual(await runToolLoop(e.exec, e.state, { checkpoints: first }), { status: 'parked' })
  assert.equal(e.provider.requests.length, 0)
  assert.deepEqual(shape(e.events), ['iteration'])
  const outcome = await runToolLoop(e.exec, e.state, { checkpoints: checkpoints(null), entry: { step: 'model', iteration: 1, malformed: 0 } })
  assert.deepEqual(outcome, { status: 'completed', finalText: 'hello' })
  assert.deepEqual(shape(e.events), ['iteration'], 'no second iteration event')
  assert.deepEqual(e.provider.requests[0]?.messages.filter((m) => m.role === 'user').map((m) => m.content), ['hi'])
})

test('a call of a resumed round whose card the stop lost gets its card, then its interrupted result, and never runs', async (t) => {
  const e = await createEngine(t)
  e.provider.enqueue({ toolCalls: [call('a', 'one')] }, { text: 'noted' })
  const first = checkpoints('dispatch')
  e.state.history.push({ role: 'user', content: 'go' })
  assert.deepEqual(await runToolLoop(e.exec, e.state, { checkpoints: first }), { status: 'parked' })
  const round = first.cursor.round
  assert.ok(round !== null)
  e.events.length = 0
  const recovered = new Map<string, RecoveredCall>([[round.slots[0]?.callId ?? '', { kind: 'started', announced: false }]])
  const outcome = await runToolLoop(e.exec, e.state, { checkpoints: checkpoints(null), entry: { step: 'dispatch', iteration: 1, malformed: 0, round, recovered } })
  assert.deepEqual(outcome, { status: 'completed', finalText: 'noted' })
  assert.deepEqual(shape(e.events), ['tool_call:probe', 'tool_result:probe:interrupted', 'iteration'])
  assert.equal(e.probes.runs.length, 0)
})
