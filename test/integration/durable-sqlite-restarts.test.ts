/**
 * Durable turns on SQLite, with real processes: a tool that was running when the process died is
 * recorded `interrupted`, never run again, and the model is told; a graceful stop parks a turn at
 * its next model call; a resumed turn keeps its original timeout; a model call in flight is made
 * again.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { assertSeqContiguous } from '../helpers/gateway.js'
import { untilFileExists } from '../helpers/processes.js'
import { deferrer } from '../helpers/services.js'
import { eventually } from '../helpers/eventually.js'
import { events, finished, kinds, setup, turnWaitingForApproval } from '../helpers/durable-sqlite.js'

test('a turn killed while a tool runs: the call is recorded interrupted, not run again, and the next round tells the model', async (t) => {
  const s = await setup(deferrer(t), { risk_profiles: { default: { level: 'full' } }, tools: { shell: { sandbox: 'none' } } })
  const first = await s.start()
  const marker = join(s.workspace, 'marker.txt')
  s.provider.enqueue(
    { toolCalls: [{ id: 's1', name: 'shell', arguments: { command: `echo ran >> ${marker}; sleep 30` } }] },
    { text: 'The command was interrupted; I will not retry it.' }
  )
  const started = await first.http('POST', '/v1/turns', { message: 'run the slow command', detach: true })
  const turnId = started.body.turn_id as string
  await untilFileExists(marker, 10_000)
  // Its card is stored too (the tick's group): the log shows the call started.
  await eventually(async () => (await events(first, turnId)).some((e) => e.event.kind === 'tool_call'), { what: 'the tool_call event' })
  await first.kill()

  const second = await s.start()
  const turn = await finished(second, turnId)
  assert.equal(turn.status, 'completed')
  assert.deepEqual(turn.tool_calls.map((c: { name: string, status: string }) => [c.name, c.status]), [['shell', 'interrupted']], JSON.stringify(turn))
  assert.equal(await readFile(marker, 'utf8'), 'ran\n', 'the command ran exactly once')
  const log = await events(second, turnId)
  assertSeqContiguous(log)
  assert.deepEqual(kinds(log), [
    'turn.started', 'iteration', 'tool_call', 'turn.resumed', 'tool_result', 'iteration', 'text.delta', 'turn.completed'
  ])
  assert.deepEqual(log[3]?.event, { kind: 'turn.resumed', from_checkpoint: 'tool_dispatch', checkpoint_seq: 2 })
  const told = s.provider.requests.at(-1)?.body.messages.at(-1)
  assert.equal(told?.role, 'tool')
  assert.match(String(told?.content), /gateway stopped while this call was running or about to run/)
})

test('SIGTERM lets a running tool finish, parks the turn before its next model call, and the restart makes that call', async (t) => {
  const s = await setup(deferrer(t), { risk_profiles: { default: { level: 'full' } }, tools: { shell: { sandbox: 'none' } } })
  const first = await s.start({ shutdown: { tool_grace_ms: 10_000 } })
  const marker = join(s.workspace, 'marker.txt')
  s.provider.enqueue(
    { toolCalls: [{ id: 's1', name: 'shell', arguments: { command: `echo ran >> ${marker}; sleep 1; echo finished` } }] },
    { text: 'It finished.' }
  )
  const started = await first.http('POST', '/v1/turns', { message: 'run the command', detach: true })
  const turnId = started.body.turn_id as string
  await untilFileExists(marker, 10_000)
  await first.stop()
  assert.equal(s.provider.requests.length, 1, 'the stopping gateway made no second model call')

  const second = await s.start()
  const turn = await finished(second, turnId)
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, 'It finished.')
  assert.deepEqual(turn.tool_calls.map((c: { name: string, status: string }) => [c.name, c.status]), [['shell', 'ok']])
  assert.equal(await readFile(marker, 'utf8'), 'ran\n')
  const log = await events(second, turnId)
  assertSeqContiguous(log)
  assert.deepEqual(kinds(log), [
    'turn.started', 'iteration', 'tool_call', 'tool_result', 'iteration', 'turn.resumed', 'text.delta', 'turn.completed'
  ])
  const at = log.findIndex((e) => e.event.kind === 'turn.resumed')
  // Parked at the second model call: the checkpoint was written with that iteration's event.
  assert.equal(log[at - 1]?.event.kind, 'iteration')
  assert.deepEqual(log[at]?.event, { kind: 'turn.resumed', from_checkpoint: 'model_call', checkpoint_seq: log[at - 1]?.seq })
  const told = s.provider.requests.at(-1)?.body.messages.at(-1)
  assert.equal(told?.role, 'tool')
  assert.match(String(told?.content), /finished/)
})

test('after a restart a resumed turn still ends by its original timeout, and a cancel reaches it like any running turn', async (t) => {
  const s = await setup(deferrer(t))
  // Long enough that the restarted gateway (seconds to start on a loaded machine) cancels one
  // turn before the other's timeout, which counts from the turn's start.
  const timeoutMs = 20_000
  const timeout = { turns: { turn_timeout_ms: timeoutMs } }
  const first = await s.start(timeout)
  const timed = await turnWaitingForApproval(first, s.provider, false)
  const cancelled = await turnWaitingForApproval(first, s.provider, false)
  await first.kill()
  // fixed wait: the downtime is the scenario: a timeout counted from the restart would end measurably later.
  await new Promise((resolve) => setTimeout(resolve, 1500))

  const second = await s.start(timeout)
  const restartedAt = Date.now()
  // Once it runs again here (its turn.resumed is in the log). Under CI load it once resumed from
  // its model call instead of its approval wait: GET /v1/approvals had listed the request before
  // its events were stored, and the kill came in between; the listing now waits for them.
  await eventually(async () => (await events(second, cancelled.turnId)).some((e) => e.event.kind === 'turn.resumed'), { what: 'the turn resumed' })
  const cancel = await second.http('DELETE', `/v1/turns/${cancelled.turnId}`)
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body))
  // On a mismatch the message shows how the turn ended, and its log (a race seen under load).
  const how = cancel.body.status === 'cancelled' ? '' : JSON.stringify({ turn: (await second.http('GET', `/v1/turns/${cancelled.turnId}`)).body, log: await events(second, cancelled.turnId) })
  assert.equal(cancel.body.status, 'cancelled', `${JSON.stringify(cancel.body)} ${how}`)
  // It ends by its timeout, up to 20 s after it started: wait past that.
  const ended = await finished(second, timed.turnId, timeoutMs + 10_000)
  assert.equal(ended.status, 'failed')
  assert.equal(ended.error.code, 'TURN_TIMEOUT')
  // Counted from the turn's start, not from the restart (which came at least 1.5 s later).
  assert.ok(Date.parse(ended.updated_at) < restartedAt + timeoutMs - 1000, `${ended.created_at} → ${ended.updated_at}, restarted ${new Date(restartedAt).toISOString()}`)
  for (const { turnId, pending } of [timed, cancelled]) {
    const log = await events(second, turnId)
    assertSeqContiguous(log)
    const resolved = log.find((e) => e.event.kind === 'approval.resolved')?.event
    assert.deepEqual(resolved, { kind: 'approval.resolved', request_id: pending.request_id, call_id: pending.call_id, decision: 'cancelled', decided_by: 'runtime' })
  }
})

test('a turn killed while its model call was in flight makes that call again after the restart, with the same messages', async (t) => {
  const s = await setup(deferrer(t))
  const first = await s.start()
  s.provider.enqueue({ hang: true }, { text: 'Answered after the restart.' })
  const started = await first.http('POST', '/v1/turns', { message: 'answer me', detach: true })
  const turnId = started.body.turn_id as string
  await eventually(() => s.provider.requests.length === 1, { what: 'the model call' })
  await first.kill()

  const second = await s.start()
  const turn = await finished(second, turnId)
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, 'Answered after the restart.')
  assert.equal(s.provider.requests.length, 2)
  assert.deepEqual(s.provider.requests[1]?.body.messages, s.provider.requests[0]?.body.messages)
  const log = await events(second, turnId)
  assertSeqContiguous(log)
  assert.deepEqual(kinds(log), ['turn.started', 'iteration', 'turn.resumed', 'text.delta', 'turn.completed'])
  assert.deepEqual(log[2]?.event, { kind: 'turn.resumed', from_checkpoint: 'model_call', checkpoint_seq: 2 })
})
