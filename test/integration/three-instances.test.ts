/**
 * Three gateways on one PostgreSQL schema and one Redis prefix, and a client that picks
 * an instance at random for every request, the way a load balancer without affinity would:
 * 100 turns that each ask for an approval, idempotent retries, receipts checked on an instance
 * other than the one that ran the call, and one instance SIGKILLed in the middle of the run.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, randomInt } from 'node:crypto'
import pg from 'pg'
import type { EventEnvelope } from '../../schemas/events.js'
import { startFakeProvider, type RecordedRequest, type ScriptedReply } from '../helpers/fake-provider.js'
import { requestIdOf, startGateway, type TestSocket } from '../helpers/gateway.js'
import { clusterOverrides, scratchWorkspace, spawnGateway } from '../helpers/cluster.js'
import { deferrer, PG_URL, scratchPrefix, scratchSchema } from '../helpers/services.js'
import { eventually } from '../helpers/eventually.js'

const TURNS = 100
const BATCH = 20
/** The batch during which one instance is killed, while its turns wait for their approvals. */
const KILL_BATCH = 2
const TERMINAL = new Set(['turn.completed', 'turn.failed', 'turn.cancelled'])

/** Each turn writes its own file (an approval-needing call), then finishes once it saw the result. */
function script (request: RecordedRequest): ScriptedReply {
  const messages = request.body.messages
  const prompt = messages.find((m) => m.role === 'user' && String(m.content).startsWith('write '))
  const n = /write (\d+)/.exec(String(prompt?.content))?.[1] ?? 'x'
  if (messages.at(-1)?.role === 'tool') return { text: `wrote ${n}` }
  return { toolCalls: [{ id: `w${n}`, name: 'file_write', arguments: { path: `out-${n}.txt`, content: `turn ${n}` } }] }
}

interface Outcome {
  key: string
  turnId: string
  /** The instance whose socket got `turn.accepted` (the turn runs there). */
  ranOn: Instance
}

interface Instance {
  instanceId: string
  http: (method: string, path: string, body?: unknown) => Promise<{ status: number, body: any }>
  socket: () => Promise<TestSocket>
}

const NAME = 'three instances via a random balancer: 100 approved turns, retries, receipts, a killed instance: nothing lost or duplicated'

test(NAME, { timeout: 120_000 }, async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  provider.enqueue(...Array.from({ length: TURNS * 3 }, () => script))
  const schema = scratchSchema(defer)
  const cluster = { provider, schema, prefix: scratchPrefix(defer) }
  const master = randomBytes(32).toString('base64')
  const extra = {
    // Generous enough for a loaded machine: a live instance must never look dead, nor answer late.
    cluster: { lease_ms: 3000, control_timeout_ms: 5000 },
    // The dead instance's turns end interrupted (durable turns resume instead: durable-cluster.test.ts).
    shutdown: { running_turns: 'cancel' },
    turns: { max_active_turns_per_principal: 64 },
    receipts: { keys: [{ id: 'k1', secret_env: 'RECEIPT_K1' }] },
    runtime_profiles: { default: { tool_receipts: { enabled: true } } }
  }
  // The instance to kill is a child process (a real SIGKILL); the two survivors run in this process.
  const local = async (): Promise<Instance> => {
    const overrides = clusterOverrides(cluster, await scratchWorkspace(defer), extra)
    const g = await startGateway({ provider, env: { RECEIPT_K1: master }, overrides })
    defer(async () => { await g.close() })
    return { http: g.http, socket: async () => await g.socket(), instanceId: g.gateway.instanceId }
  }
  // All settled before any failure is thrown: an instance still starting would otherwise register
  // its cleanup after the cleanups ran, and keep the test process alive.
  const settled = await Promise.allSettled([
    spawnGateway(defer, clusterOverrides(cluster, await scratchWorkspace(defer), extra), { env: { RECEIPT_K1: master } }),
    local(),
    local()
  ])
  const [doomed, ...survivors] = settled.map((r) => {
    if (r.status === 'rejected') throw r.reason
    return r.value
  }) as [Instance & { kill: () => Promise<void> }, Instance, Instance]
  const instances: Instance[] = [doomed, ...survivors]
  const dead = new Set<Instance>()
  const live = (): Instance[] => instances.filter((g) => !dead.has(g))
  const pick = (besides?: Instance): Instance => {
    const choices = live().filter((g) => g !== besides)
    return choices[randomInt(choices.length)] as Instance
  }
  /** One HTTP request to a random live instance; a refused connection (a dead instance) tries another. */
  const http = async (method: string, path: string, body?: unknown, besides?: Instance): Promise<{ status: number, body: any }> => {
    for (;;) {
      const g = pick(besides)
      try {
        return await g.http(method, path, body)
      } catch (err) {
        if (!dead.has(g)) throw err
      }
    }
  }

  /** Starts (or finds again) the turn of `key` from a socket on a random instance; retries elsewhere if that one dies. */
  const start = async (n: number, key: string, on?: Instance): Promise<Outcome & { ws: TestSocket }> => {
    const g = on ?? pick()
    const ws = await g.socket()
    const accepted = await ws.request({ type: 'turn.start', message: `write ${n}`, idempotency_key: key }, 20_000)
    assert.equal(accepted.type, 'turn.accepted', JSON.stringify(accepted))
    return { key, turnId: accepted.turn_id, ranOn: g, ws }
  }

  const outcomes: Outcome[] = []
  let killed: Promise<void> | null = null
  for (let batch = 0; batch < TURNS / BATCH; batch++) {
    const started = await Promise.all(Array.from({ length: BATCH }, async (_, i) => {
      const n = batch * BATCH + i
      // The kill batch has turns on the doomed instance for sure.
      return await start(n, `key-${n}-${randomBytes(3).toString('hex')}`, batch === KILL_BATCH && i < 5 ? doomed : undefined)
    }))
    await Promise.all(started.map(async (s) => await s.ws.waitForEvent(s.turnId, (e) => e.kind === 'approval.requested', 20_000)))
    if (batch === KILL_BATCH) {
      dead.add(doomed)
      killed = doomed.kill()
      await killed
    }
    await Promise.all(started.map(async (s) => {
      const requested = s.ws.events(s.turnId).find((e) => e.event.kind === 'approval.requested') as EventEnvelope
      if (s.ranOn === doomed && batch >= KILL_BATCH) {
        // Its turn died with its instance: an answer finds no live instance holding the request.
        const answer = await http('POST', `/v1/approvals/${requestIdOf(requested)}`, { decision: 'yes' })
        assert.equal(answer.body.code, 'APPROVAL_NOT_FOUND', JSON.stringify(answer.body))
      } else {
        const answer = await http('POST', `/v1/approvals/${requestIdOf(requested)}`, { decision: 'yes' })
        assert.equal(answer.status, 200, JSON.stringify(answer.body))
      }
      // A client that did not hear back retries with the same key, wherever the balancer sends it.
      const retry = await http('POST', '/v1/turns', { message: `write ${Number(s.key.split('-')[1])}`, idempotency_key: s.key })
      assert.equal(retry.status, 202, JSON.stringify(retry.body))
      assert.equal(retry.body.turn_id, s.turnId, 'a retry answers the original turn')
      if (!dead.has(s.ranOn)) await s.ws.waitForTerminal(s.turnId, 20_000)
      s.ws.close()
      outcomes.push({ key: s.key, turnId: s.turnId, ranOn: s.ranOn })
    }))
  }
  assert.notEqual(killed, null)

  // Every turn ends: the killed instance's turns are ended `interrupted` by a survivor.
  const records = new Map<string, any>()
  for (const o of outcomes) {
    await eventually(async () => {
      const res = await http('GET', `/v1/turns/${o.turnId}`)
      records.set(o.turnId, res.body)
      return res.body.status !== 'running'
    }, { what: `turn ${o.turnId} to end`, timeoutMs: 30_000 })
  }

  let verified = 0
  for (const o of outcomes) {
    const turn = records.get(o.turnId)
    const killedHere = o.ranOn === doomed && turn.status === 'interrupted'
    assert.ok(turn.status === 'completed' || killedHere, `${o.turnId} on ${o.ranOn.instanceId}: ${String(turn.status)}`)
    // No event lost: the log read from any live instance runs 1..last_seq and ends with one terminal event.
    const { body } = await http('GET', `/v1/turns/${o.turnId}/events?after_seq=0`)
    const seqs = body.events.map((e: EventEnvelope) => e.seq)
    assert.deepEqual(seqs, Array.from({ length: turn.last_seq }, (_, i) => i + 1), o.turnId)
    const terminals = body.events.filter((e: EventEnvelope) => TERMINAL.has(e.event.kind))
    assert.equal(terminals.length, 1)
    assert.equal(body.events.at(-1).event.kind, turn.status === 'completed' ? 'turn.completed' : 'turn.failed')
    if (turn.status !== 'completed') continue
    // Every receipt verifies on an instance other than the one that ran the call.
    for (const call of turn.tool_calls) {
      assert.equal(call.status, 'ok')
      const verify = await http('POST', '/v1/receipts/verify', {
        receipt: call.receipt, turn_id: o.turnId, call_id: call.call_id, tool: call.name, arguments: call.arguments, output: call.output
      }, o.ranOn)
      assert.deepEqual(verify.body, { valid: true }, o.turnId)
      verified++
    }
  }

  // No duplicate: one stored turn per key, and each turn asked the model for its file once.
  assert.equal(new Set(outcomes.map((o) => o.turnId)).size, TURNS)
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".tollgate_turns`)
    assert.equal(Number(rows[0]?.n), TURNS)
  } finally {
    await client.end()
  }
  const firstCalls = provider.requests.filter((r) => r.body.messages.at(-1)?.role === 'user')
  assert.equal(firstCalls.length, TURNS)
  const interrupted = outcomes.filter((o) => records.get(o.turnId).status === 'interrupted').length
  assert.ok(interrupted >= 5, `the killed instance's turns were interrupted (${interrupted})`)
  assert.equal(verified, TURNS - interrupted)
})
