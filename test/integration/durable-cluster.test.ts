/**
 * Durable turns across instances (PostgreSQL + Redis): the instance running a turn dies while the
 * turn waits for a person; another instance takes the turn over once the dead one's lease has
 * expired, and a client connected to it answers and sees the turn complete.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { LOCAL_PRINCIPAL } from '../../src/auth/principal.js'
import { workspaceSlug } from '../../src/tools/builtin/workspace-layout.js'
import { startFakeProvider } from '../helpers/fake-provider.js'
import { assertSeqContiguous, requestIdOf, shape, startGateway } from '../helpers/gateway.js'
import { clusterOverrides, scratchWorkspace, spawnGateway } from '../helpers/cluster.js'
import { deferrer, scratchPrefix, scratchSchema } from '../helpers/services.js'

test('a turn waiting for approval on an instance that dies is taken over by another instance after the lease, answered there, and completes', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const cluster = { provider, schema: scratchSchema(defer), prefix: scratchPrefix(defer) }
  const extra = { cluster: { lease_ms: 2000 } }
  const a = await spawnGateway(defer, clusterOverrides(cluster, await scratchWorkspace(defer), extra))
  const bWorkspace = await scratchWorkspace(defer)
  const b = await startGateway({ provider, overrides: clusterOverrides(cluster, bWorkspace, extra) })
  defer(async () => { await b.close() })

  provider.enqueue(
    { toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'taken-over.txt', content: 'written on B' } }] },
    { text: 'Written.' }
  )
  // Owned by a socket on A: the socket dies with A, the turn does not.
  const owner = await a.socket()
  const accepted = await owner.request({ type: 'turn.start', message: 'write the file' })
  assert.equal(accepted.type, 'turn.accepted', JSON.stringify(accepted))
  const turnId = accepted.turn_id as string
  const watcher = await b.socket()
  assert.equal((await watcher.request({ type: 'subscribe', turn_id: turnId, after_seq: 0 })).type, 'subscribed')
  const asked = await watcher.waitForEvent(turnId, (e) => e.kind === 'approval.requested', 10_000)
  await a.kill()

  // B sweeps every lease/3 and takes the turn over once A's lease has run out.
  const resumed = await watcher.waitForEvent(turnId, (e) => e.kind === 'turn.resumed', 15_000)
  assert.deepEqual(resumed.event, { kind: 'turn.resumed', from_checkpoint: 'approval_wait', checkpoint_seq: asked.seq - 1 })
  const listed = await b.http('GET', `/v1/approvals?status=pending&turn_id=${turnId}`)
  assert.deepEqual(listed.body.items.map((p: { request_id: string, expires_at: string }) => [p.request_id, p.expires_at]), [
    [requestIdOf(asked), asked.event.kind === 'approval.requested' ? asked.event.expires_at : '']
  ])
  const answer = await watcher.request({ type: 'approval.respond', request_id: requestIdOf(asked), decision: 'yes' })
  assert.equal(answer.type, 'approval.accepted', JSON.stringify(answer))

  const events = await watcher.waitForTerminal(turnId, 15_000)
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration', 'approval.requested:file_write', 'turn.resumed', 'approval.resolved:yes',
    'tool_call:file_write', 'tool_result:file_write:ok', 'iteration', 'turn.completed'
  ])
  const turn = await b.http('GET', `/v1/turns/${turnId}`)
  assert.equal(turn.body.status, 'completed')
  assert.deepEqual(turn.body.approvals.map((e: { decision: string, channel: string }) => [e.decision, e.channel]), [['yes', 'websocket']])
  assert.equal(await readFile(join(bWorkspace, workspaceSlug(LOCAL_PRINCIPAL.tenant), 'taken-over.txt'), 'utf8'), 'written on B')
  // The stored log (PostgreSQL) has the whole turn too, without gap or duplicate.
  const stored = await b.http('GET', `/v1/turns/${turnId}/events`)
  assert.deepEqual(stored.body.events.map((e: { seq: number }) => e.seq), events.map((e) => e.seq))
})

test('a deploy: the instance a waiting turn runs on stops gracefully, another instance resumes the turn without waiting for the lease', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const cluster = { provider, schema: scratchSchema(defer), prefix: scratchPrefix(defer) }
  // A lease far longer than the test: only the stopped instance giving its lease up lets B take over.
  const extra = { cluster: { lease_ms: 120_000 } }
  const a = await spawnGateway(defer, clusterOverrides(cluster, await scratchWorkspace(defer), extra))
  const bOverrides = clusterOverrides(cluster, await scratchWorkspace(defer), { cluster: { lease_ms: 3000 } })
  const b = await startGateway({ provider, overrides: bOverrides })
  defer(async () => { await b.close() })

  provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'deploy.txt', content: 'x' } }] }, { text: 'Done.' })
  const started = await a.http('POST', '/v1/turns', { message: 'write during a deploy', detach: true })
  const turnId = started.body.turn_id as string
  const watcher = await b.socket()
  assert.equal((await watcher.request({ type: 'subscribe', turn_id: turnId, after_seq: 0 })).type, 'subscribed')
  const asked = await watcher.waitForEvent(turnId, (e) => e.kind === 'approval.requested', 10_000)
  await a.stop()

  await watcher.waitForEvent(turnId, (e) => e.kind === 'turn.resumed', 10_000)
  const answer = await b.http('POST', `/v1/approvals/${requestIdOf(asked)}`, { decision: 'yes' })
  assert.equal(answer.status, 200, JSON.stringify(answer.body))
  const events = await watcher.waitForTerminal(turnId, 15_000)
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration', 'approval.requested:file_write', 'turn.resumed', 'approval.resolved:yes',
    'tool_call:file_write', 'tool_result:file_write:ok', 'iteration', 'turn.completed'
  ])
  assert.equal((await b.http('GET', `/v1/turns/${turnId}`)).body.status, 'completed')
})
