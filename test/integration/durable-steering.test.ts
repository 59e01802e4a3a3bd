/**
 * Steering of a durable turn on SQLite, with real processes: a message queued while the turn waits
 * for an approval is in its log before the 202, so SIGKILL of the gateway loses nothing; the next
 * gateway resumes the turn with the message still queued, and the model reads it after the tool's
 * result, once.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { assertSeqContiguous } from '../helpers/gateway.js'
import { deferrer } from '../helpers/services.js'
import { events, finished, kinds, setup, turnWaitingForApproval } from '../helpers/durable-sqlite.js'

test('a turn parked at an approval keeps its queued steering message across SIGKILL and restart: the model reads it after the tool result', async (t) => {
  const s = await setup(deferrer(t))
  const first = await s.start()
  const { turnId, pending } = await turnWaitingForApproval(first, s.provider, false)
  const steered = await first.http('POST', `/v1/turns/${turnId}/messages`, { message: 'and then say done' })
  assert.equal(steered.status, 202, JSON.stringify(steered.body))
  await first.kill()

  const second = await s.start()
  s.provider.enqueue({ text: 'done' })
  const answer = await second.http('POST', `/v1/approvals/${pending.request_id as string}`, { decision: 'yes' })
  assert.equal(answer.status, 200, JSON.stringify(answer.body))
  const turn = await finished(second, turnId)
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, 'done')

  const sent = s.provider.requests.at(-1)?.body.messages ?? []
  assert.deepEqual(sent.slice(-2).map((m) => m.role), ['tool', 'user'])
  assert.equal(sent.at(-1)?.content, 'and then say done')
  assert.equal(sent.filter((m) => m.content === 'and then say done').length, 1)

  const log = await events(second, turnId)
  assertSeqContiguous(log)
  assert.deepEqual(kinds(log), [
    'turn.started', 'iteration', 'approval.requested', 'user.message',
    'turn.resumed', 'approval.resolved', 'tool_call', 'tool_result', 'iteration', 'text.delta', 'turn.completed'
  ])
  assert.equal(log.find((e) => e.event.kind === 'user.message')?.seq, steered.body.seq)
})
