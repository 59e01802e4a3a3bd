/**
 * Durable turns on SQLite, with real processes: a turn waiting for a person survives SIGKILL and
 * SIGTERM of its gateway and continues in the next one exactly where it stopped; a tool that was
 * running when the process died is recorded `interrupted`, never run again, and the model is told.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EventEnvelope } from '../../schemas/events.js'
import { LOCAL_PRINCIPAL } from '../../src/auth/principal.js'
import { workspaceSlug } from '../../src/tools/builtin/workspace-layout.js'
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js'
import { assertSeqContiguous } from '../helpers/gateway.js'
import { clusterOverrides, scratchWorkspace, spawnGateway, type GatewayProcess } from '../helpers/cluster.js'
import { CRASH_AFTER_EVENT_WRITE_ENV } from '../../src/bus/create.js'
import { untilFileExists } from '../helpers/processes.js'
import { deferrer, type Defer } from '../helpers/services.js'
import { until } from '../helpers/turns.js'

interface Setup {
  provider: FakeProvider
  workspace: string
  start: (extra?: unknown, env?: Record<string, string>) => Promise<GatewayProcess>
}

async function setup (defer: Defer, extra: unknown = {}): Promise<Setup> {
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-durable-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  const workspace = await scratchWorkspace(defer)
  const path = join(dir, 'data', 'tollgate.db')
  return {
    provider,
    workspace,
    start: async (more = {}, env = {}) => await spawnGateway(defer, clusterOverrides({ provider }, workspace, {
      store: { kind: 'sqlite', sqlite: { path } }, ...extra as object, ...more as object
    }), { env })
  }
}

async function events (g: GatewayProcess, turnId: string): Promise<EventEnvelope[]> {
  const page = await g.http('GET', `/v1/turns/${turnId}/events`)
  assert.equal(page.status, 200, JSON.stringify(page.body))
  return page.body.events
}

async function finished (g: GatewayProcess, turnId: string): Promise<any> {
  let turn: any
  await until(async () => {
    turn = (await g.http('GET', `/v1/turns/${turnId}`)).body
    return turn.status !== 'running'
  }, `turn ${turnId} to finish`, 15_000)
  return turn
}

/** Event kinds in order, a streamed text's run of deltas as one, without a command's progress lines. */
function kinds (log: readonly EventEnvelope[]): string[] {
  return log.map((e) => e.event.kind).filter((k, i, all) => k !== 'tool.progress' && (k !== 'text.delta' || all[i - 1] !== 'text.delta'))
}

function tenantFile (workspace: string, name: string): string {
  return join(workspace, workspaceSlug(LOCAL_PRINCIPAL.tenant), name)
}

/**
 * Starts a detached turn whose first call (file_write) waits for approval, the model's final
 * answer scripted after it (`final: false`: none); answers its pending request.
 */
async function turnWaitingForApproval (g: GatewayProcess, provider: FakeProvider, final = true): Promise<{ turnId: string, pending: any }> {
  provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'out.txt', content: 'written once\n' } }] })
  if (final) provider.enqueue({ text: 'The file is written.' })
  const started = await g.http('POST', '/v1/turns', { message: 'write the file', detach: true })
  assert.equal(started.status, 202, JSON.stringify(started.body))
  const turnId = started.body.turn_id as string
  return { turnId, pending: await firstPendingApproval(g, turnId, 'the approval request') }
}

/** Waits for the turn's first pending approval request as `GET /v1/approvals` lists it. */
async function firstPendingApproval (g: GatewayProcess, turnId: string, what: string): Promise<any> {
  let pending: any
  await until(async () => {
    pending = (await g.http('GET', `/v1/approvals?status=pending&turn_id=${turnId}`)).body.items?.[0]
    return pending !== undefined
  }, what, 10_000)
  return pending
}

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
  await until(async () => {
    pending = (await first.http('GET', '/v1/approvals?status=pending')).body.items?.[0]
    return pending !== undefined
  }, 'the approval request', 10_000)
  await first.stop()
  const answered = await waiting
  assert.equal(answered.status, 200, JSON.stringify(answered.body))
  assert.equal(answered.body.status, 'running')
  assert.deepEqual(answered.body.pending_approvals, [pending])
  assert.deepEqual(answered.body.approvals, [], 'parking is not a decision')

  const second = await s.start()
  assert.deepEqual((await second.http('GET', `/v1/approvals?status=pending&turn_id=${answered.body.turn_id as string}`)).body.items, [pending])
})

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
  await until(async () => (await events(first, turnId)).some((e) => e.event.kind === 'tool_call'), 'the tool_call event')
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

test('after a restart a resumed turn still ends by its original timeout, and a cancel reaches it like any running turn', async (t) => {
  const s = await setup(deferrer(t))
  const timeout = { turns: { turn_timeout_ms: 8000 } }
  const first = await s.start(timeout)
  const timed = await turnWaitingForApproval(first, s.provider, false)
  const cancelled = await turnWaitingForApproval(first, s.provider, false)
  await first.kill()
  await new Promise((resolve) => setTimeout(resolve, 1500))

  const second = await s.start(timeout)
  const restartedAt = Date.now()
  const cancel = await second.http('DELETE', `/v1/turns/${cancelled.turnId}`)
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body))
  assert.equal(cancel.body.status, 'cancelled')
  const ended = await finished(second, timed.turnId)
  assert.equal(ended.status, 'failed')
  assert.equal(ended.error.code, 'TURN_TIMEOUT')
  // Counted from the turn's start, not from the restart (which came at least 1.5 s later).
  assert.ok(Date.parse(ended.updated_at) < restartedAt + 8000 - 1000, `${ended.created_at} → ${ended.updated_at}, restarted ${new Date(restartedAt).toISOString()}`)
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
  await until(() => s.provider.requests.length === 1, 'the model call')
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
