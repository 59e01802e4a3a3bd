/**
 * Approval answers survive a crash, with real processes: 60 turns of a gateway on SQLite wait for
 * approval, all are answered in one burst of REST requests, and the gateway is SIGKILLed a few
 * milliseconds later, while answers are still being taken. After the restart every turn ends with
 * one terminal event and a log without a hole; an acknowledged answer is never lost, and the
 * audit names the answer that decided each call.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EventEnvelope } from '../../schemas/events.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { startFakeProvider, type RecordedRequest, type ScriptedReply } from '../helpers/fake-provider.js'
import { assertSeqContiguous } from '../helpers/gateway.js'
import { clusterOverrides, scratchWorkspace, spawnGateway, type GatewayProcess } from '../helpers/cluster.js'
import { deferrer } from '../helpers/services.js'
import { eventually } from '../helpers/eventually.js'

const TURNS = 60
const TERMINAL = new Set(['turn.completed', 'turn.cancelled', 'turn.failed'])

/** Turn `i` asks to write `out-i.txt`, then, once it has the call's result, answers with its number. */
function scripted (request: RecordedRequest): ScriptedReply {
  const { messages } = request.body
  const i = /file (\d+)/.exec(String(messages.find((m) => m.role === 'user')?.content))?.[1] ?? '?'
  if (messages.at(-1)?.role === 'tool') return { text: `done ${i}` }
  return { toolCalls: [{ id: `w${i}`, name: 'file_write', arguments: { path: `out-${i}.txt`, content: `${i}\n` } }] }
}

/** Every pending request of the principal, by turn (60 fit in one page). */
async function pendingByTurn (g: GatewayProcess): Promise<Map<string, { request_id: string }>> {
  const page = await g.http('GET', '/v1/approvals?status=pending&limit=100')
  assert.equal(page.status, 200, JSON.stringify(page.body))
  return new Map(page.body.items.map((p: { turn_id: string, request_id: string }) => [p.turn_id, p]))
}

/** A POST over `agent`'s kept-alive connections: the answer's status, or null when the connection died first. */
async function post (agent: Agent, base: string, path: string, body: unknown): Promise<number | null> {
  return await new Promise((resolve) => {
    const req = request(new URL(path, base), { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume()
      res.on('end', () => { resolve(res.statusCode ?? null) })
      res.on('error', () => { resolve(null) })
    })
    req.on('error', () => { resolve(null) })
    req.end(JSON.stringify(body))
  })
}

async function eventsOf (g: GatewayProcess, turnId: string): Promise<EventEnvelope[]> {
  const page = await g.http('GET', `/v1/turns/${turnId}/events?after_seq=0`)
  assert.equal(page.status, 200, JSON.stringify(page.body))
  return page.body.events
}

for (const delayMs of [15, 30]) {
  test(`60 turns answered in one burst and SIGKILLed ${delayMs} ms later each end once after the restart, with no hole in their logs and the deciding answer audited`, async (t) => {
    const defer = deferrer(t)
    const provider = await startFakeProvider()
    defer(async () => { await provider.close() })
    const dir = await mkdtemp(join(tmpdir(), 'tollgate-durable-answers-'))
    defer(async () => { await rm(dir, { recursive: true, force: true }) })
    const workspace = await scratchWorkspace(defer)
    const path = join(dir, 'tollgate.db')
    const overrides = clusterOverrides({ provider }, workspace, {
      store: { kind: 'sqlite', sqlite: { path } },
      turns: { max_active_turns_per_principal: TURNS }
    })
    // Two model calls a turn, and one more for a turn whose model call the kill cut short.
    provider.enqueue(...Array.from({ length: 3 * TURNS }, () => scripted))
    const first = await spawnGateway(defer, overrides)

    const turnIds: string[] = []
    for (let i = 0; i < TURNS; i++) {
      const started = await first.http('POST', '/v1/turns', { message: `write file ${i}`, detach: true })
      assert.equal(started.status, 202, JSON.stringify(started.body))
      turnIds.push(started.body.turn_id)
    }
    let pending = new Map<string, { request_id: string }>()
    await eventually(async () => (pending = await pendingByTurn(first)).size === TURNS, { what: 'every turn waiting for approval', timeoutMs: 30_000 })

    // Even turns are approved, odd ones denied: the outcome shows which answer decided.
    const decisionOf = (turnId: string): 'yes' | 'no' => turnIds.indexOf(turnId) % 2 === 0 ? 'yes' : 'no'
    // One open connection per answer, so that the whole burst reaches the gateway at once.
    const agent = new Agent({ keepAlive: true, maxSockets: TURNS })
    defer(async () => { agent.destroy() })
    await Promise.all(turnIds.map(async () => { assert.equal(await post(agent, first.url, '/v1/approvals/apr_warm-up', {}), 400) }))
    const acknowledged = new Set<string>()
    const burst = turnIds.map(async (turnId) => {
      const status = await post(agent, first.url, `/v1/approvals/${pending.get(turnId)?.request_id ?? ''}`, { decision: decisionOf(turnId) })
      if (status === 200) acknowledged.add(turnId)
    })
    // fixed wait: the delay is the attack: the process dies while answers are still being taken.
    await new Promise((resolve) => setTimeout(resolve, delayMs))
    await first.kill()
    await Promise.all(burst)

    // What the dead process left on disk: no record claims an event, or an answer, its log lacks.
    const left = new SqliteStore({ path, instanceId: 'inspector', checkpointMs: 0 })
    for (const turnId of turnIds) {
      const record = await left.getTurn(turnId)
      const log = await left.readEvents(turnId, 0, 1000)
      assert.ok(record !== null && record.last_seq <= (log.at(-1)?.seq ?? 0), `turn ${turnId}: last_seq ${record?.last_seq} past its log`)
      const logged = new Set(log.flatMap((e) => e.event.kind === 'approval.resolved' ? [e.event.request_id] : []))
      for (const a of record.approvals) assert.ok(logged.has(a.request_id), `turn ${turnId}: audited answer ${a.request_id} not in its log`)
    }
    await left.close()

    const second = await spawnGateway(defer, overrides)
    // An acknowledged answer is never asked again; an unacknowledged one may be: its client retries.
    const again = await pendingByTurn(second)
    for (const turnId of acknowledged) assert.equal(again.has(turnId), false, `turn ${turnId}: its acknowledged answer was lost`)
    const socket = await second.socket()
    const retried = new Set<string>()
    for (const [turnId, request] of again) {
      const ack = await socket.request({ type: 'approval.respond', request_id: request.request_id, decision: decisionOf(turnId) })
      assert.equal(ack.type, 'approval.accepted', JSON.stringify(ack))
      retried.add(turnId)
    }
    t.diagnostic(`${acknowledged.size} answers acknowledged before the kill, ${retried.size} given again after the restart`)

    for (const turnId of turnIds) {
      // A subscriber from the start gets the whole log, up to its one terminal event.
      const subscriber = await second.socket()
      assert.equal((await subscriber.request({ type: 'subscribe', turn_id: turnId, after_seq: 0 })).type, 'subscribed')
      const followed = await subscriber.waitForTerminal(turnId, 20_000)
      subscriber.close()
      const log = await eventsOf(second, turnId)
      assertSeqContiguous(log)
      assert.deepEqual(followed.map((e) => e.seq), log.map((e) => e.seq), `turn ${turnId}: the subscriber got the log as stored`)
      assert.deepEqual(log.filter((e) => TERMINAL.has(e.event.kind)).map((e) => e.seq), [log.length], `turn ${turnId}: one terminal event, the last`)
      const turn = (await second.http('GET', `/v1/turns/${turnId}`)).body
      assert.equal(turn.status, 'completed', JSON.stringify(turn))
      assert.equal(turn.last_seq, log.length)

      const request = pending.get(turnId)?.request_id
      const resolved = log.filter((e) => e.event.kind === 'approval.resolved').map((e) => e.event)
      assert.equal(resolved.length, 1, `turn ${turnId}: ${JSON.stringify(resolved)}`)
      const [audit, ...more] = turn.approvals
      assert.deepEqual(more, [])
      // The audit names the answer that decided: the request, the decision the log and the call show, who gave it.
      assert.equal(audit.request_id, request)
      assert.equal(audit.decision, decisionOf(turnId))
      assert.deepEqual(resolved[0], { kind: 'approval.resolved', request_id: request, call_id: audit.call_id, decision: audit.decision, decided_by: audit.decided_by })
      assert.equal(audit.channel, retried.has(turnId) ? 'websocket' : 'rest')
      // An approved call ran, or had been about to when the process died (then it is never run again).
      const statuses = turn.tool_calls.map((c: { status: string }) => c.status)
      if (decisionOf(turnId) === 'yes') assert.ok(['ok', 'interrupted'].includes(statuses.join()), `turn ${turnId}: ${JSON.stringify(statuses)}`)
      else assert.deepEqual(statuses, ['denied'])
    }
  })
}
