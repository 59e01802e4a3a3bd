/**
 * Durable turns on SQLite, with real processes: a turn waiting for a person survives SIGKILL and
 * SIGTERM of its gateway and continues in the next one exactly where it stopped, and an answer
 * given just before the gateway died is not asked again. (Split from one file so that each stays
 * well inside the runner's per-file timeout.)
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { assertSeqContiguous } from '../helpers/gateway.js'
import { CRASH_AFTER_EVENT_WRITE_ENV } from '../fixtures/crash-points.js'
import { deferrer } from '../helpers/services.js'
import { eventually } from '../helpers/eventually.js'
import { events, finished, firstPendingApproval, kinds, setup, tenantFile, turnWaitingForApproval } from '../helpers/durable-sqlite.js'

for (const stop of ['SIGKILL', 'SIGTERM'] as const) {
  test(`a turn waiting for approval survives ${stop} of its gateway: the request waits again after the restart, the answer runs the tool once and the turn completes`, async (t) => {
    const s = await setup(deferrer(t))
    const first = await s.start()
    const { turnId, pending } = await turnWaitingForApproval(first, s.provider)
    const before = await events(first, turnId)
    if (stop === 'SIGKILL') await first.kill()
    else await first.stop()

    const second = await s.start()
    // Still listed, under the same id and expiry, and still running.
    const listed = await second.http('GET', `/v1/approvals?status=pending&turn_id=${turnId}`)
    assert.deepEqual(listed.body.items, [pending])
    assert.equal((await second.http('GET', `/v1/turns/${turnId}`)).body.status, 'running')
    // A client that saw the first half reconnects where it stopped and sees the turn go on.
    const follower = await second.socket()
    assert.equal((await follower.request({ type: 'subscribe', turn_id: turnId, after_seq: before.length })).type, 'subscribed')
    const answer = await second.http('POST', `/v1/approvals/${pending.request_id as string}`, { decision: 'yes' })
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const followed = await follower.waitForTerminal(turnId, 15_000)
    const turn = await finished(second, turnId)
    assert.equal(turn.status, 'completed')
    assert.equal(turn.final_text, 'The file is written.')
    assert.deepEqual(turn.tool_calls.map((c: { name: string, status: string }) => [c.name, c.status]), [['file_write', 'ok']])
    assert.deepEqual(turn.approvals.map((a: { request_id: string, decision: string }) => [a.request_id, a.decision]), [[pending.request_id, 'yes']])
    assert.equal(await readFile(tenantFile(s.workspace, 'out.txt'), 'utf8'), 'written once\n')

    const log = await events(second, turnId)
    assertSeqContiguous(log)
    assert.deepEqual(log.slice(0, before.length), before, 'the events before the stop are kept as they were')
    assert.deepEqual(followed.map((e) => e.seq), log.slice(before.length).map((e) => e.seq))
    assert.deepEqual(kinds(log.slice(before.length)), [
      'turn.resumed', 'approval.resolved', 'tool_call', 'tool_result', 'iteration', 'text.delta', 'turn.completed'
    ])
    // Taken as the request was made, written with its approval.requested event (the last before the stop).
    assert.equal(before.at(-1)?.event.kind, 'approval.requested')
    assert.deepEqual(log[before.length]?.event, { kind: 'turn.resumed', from_checkpoint: 'approval_wait', checkpoint_seq: before.length - 1 })
    assert.equal(kinds(log).filter((k) => k === 'turn.cancelled' || k === 'turn.failed').length, 0)
    // The model's second call saw the tool's real result.
    const sent = s.provider.requests.at(-1)?.body.messages.at(-1)
    assert.equal(sent?.role, 'tool')
    assert.match(String(sent?.content), /out\.txt/)
  })
}

test('a ?wait=true request held over a graceful stop answers with the parked turn as stored: still running, its request still pending, no decision', async (t) => {
  const s = await setup(deferrer(t))
  const first = await s.start()
  s.provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'out.txt', content: 'later\n' } }] })
  const waiting = first.http('POST', '/v1/turns?wait=true', { message: 'write the file' })
  let pending: any
  await eventually(async () => {
    pending = (await first.http('GET', '/v1/approvals?status=pending')).body.items?.[0]
    return pending !== undefined
  }, { what: 'the approval request', timeoutMs: 10_000 })
  await first.stop()
  const answered = await waiting
  assert.equal(answered.status, 200, JSON.stringify(answered.body))
  assert.equal(answered.body.status, 'running')
  assert.deepEqual(answered.body.pending_approvals, [pending])
  assert.deepEqual(answered.body.approvals, [], 'parking is not a decision')

  const second = await s.start()
  assert.deepEqual((await second.http('GET', `/v1/approvals?status=pending&turn_id=${answered.body.turn_id as string}`)).body.items, [pending])
})

test('an approval answered just before the gateway died is not asked again: the restart waits for the next one and both calls run once', async (t) => {
  const s = await setup(deferrer(t))
  // The process dies right after writing the group with the first answer (and the second request).
  const first = await s.start({}, { [CRASH_AFTER_EVENT_WRITE_ENV]: 'approval.resolved' })
  s.provider.enqueue(
    {
      toolCalls: [
        { id: 'w1', name: 'file_write', arguments: { path: 'one.txt', content: 'one\n' } },
        { id: 'w2', name: 'file_write', arguments: { path: 'two.txt', content: 'two\n' } }
      ]
    },
    { text: 'Both written.' }
  )
  const started = await first.http('POST', '/v1/turns', { message: 'write both', detach: true })
  const turnId = started.body.turn_id as string
  const firstAsk = await firstPendingApproval(first, turnId, 'the first approval request')
  const exited = new Promise((resolve) => first.child.once('exit', resolve))
  await first.http('POST', `/v1/approvals/${firstAsk.request_id as string}`, { decision: 'yes' }).catch(() => null)
  await exited

  const second = await s.start()
  const listed = (await second.http('GET', `/v1/approvals?status=pending&turn_id=${turnId}`)).body.items
  assert.deepEqual(listed.map((p: { call_id: string }) => p.call_id).length, 1)
  assert.notEqual(listed[0].request_id, firstAsk.request_id, 'the answered request is not asked again')
  assert.equal((await second.http('POST', `/v1/approvals/${listed[0].request_id as string}`, { decision: 'yes' })).status, 200)
  const turn = await finished(second, turnId)
  assert.equal(turn.status, 'completed')
  assert.deepEqual(turn.tool_calls.map((c: { name: string, status: string }) => [c.name, c.status]), [['file_write', 'ok'], ['file_write', 'ok']])
  assert.deepEqual(turn.approvals.map((a: { request_id: string, decision: string }) => [a.request_id, a.decision]), [
    [firstAsk.request_id, 'yes'], [listed[0].request_id, 'yes']
  ])
  assert.equal(await readFile(tenantFile(s.workspace, 'one.txt'), 'utf8'), 'one\n')
  assert.equal(await readFile(tenantFile(s.workspace, 'two.txt'), 'utf8'), 'two\n')
  const log = await events(second, turnId)
  assertSeqContiguous(log)
  assert.deepEqual(kinds(log), [
    'turn.started', 'iteration', 'approval.requested', 'approval.resolved', 'approval.requested', 'turn.resumed', 'approval.resolved',
    'tool_call', 'tool_result', 'tool_call', 'tool_result', 'iteration', 'text.delta', 'turn.completed'
  ])
})
