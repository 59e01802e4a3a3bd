/**
 * Hard budgets: every model call is reserved at its worst case against the turn's, session's and
 * tenant's budgets before it is made, atomically in the store, and settled to its real cost after.
 * Prices here make every call cost exactly $0.01 and reserve exactly $0.01: 5 completion tokens at
 * $2000 per million, `max_tokens = 5`, input free.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFakeProvider, type FakeProvider, type ScriptedReply } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { deferrer, PG_URL, scratchSchema } from '../helpers/services.js'
import { finishedTurn, runTurn, startTurn, turnEvents } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

const PRICED = { pricing: { input_usd_per_mtok: 0, output_usd_per_mtok: 2000 }, max_tokens: 5 }
const CALL = { prompt_tokens: 10, completion_tokens: 5 }

function toolForever (n: number): ScriptedReply[] {
  return Array.from({ length: n }, (_, i) => ({ toolCalls: [{ id: `c${i}`, name: 'file_read', arguments: { path: `missing-${i}.txt` } }], usage: CALL }))
}

function answers (n: number): ScriptedReply[] {
  return Array.from({ length: n }, () => ({ text: 'done', usage: CALL, delayMs: 50 }))
}

async function gateway (
  t: TestContext, budgets: Record<string, unknown>, extra: Record<string, unknown> = {}, provider?: FakeProvider
): Promise<TestGateway> {
  const g = await startGateway({
    ...(provider === undefined ? {} : { provider }),
    overrides: { providers: { fake: PRICED }, budgets, turns: { max_active_turns_per_principal: 50 }, ...extra }
  })
  t.after(async () => { await g.close() })
  return g
}

test('turn_usd 0.025 and a model that calls tools forever: the turn fails BUDGET_EXCEEDED after 2 model calls', async (t) => {
  const g = await gateway(t, { turn_usd: 0.025 })
  g.provider.enqueue(...toolForever(10))
  const { turn, events } = await runTurn(g, { message: 'keep reading' })
  assert.equal(turn.status, 'failed')
  const last = events.at(-1)?.event
  assert.equal(last?.kind, 'turn.failed')
  assert.equal(last?.kind === 'turn.failed' ? last.code : '', 'BUDGET_EXCEEDED')
  assert.match(last?.kind === 'turn.failed' ? last.message : '', /budget turn_usd exceeded: spent 0\.02 USD of 0\.025 USD/)
  assert.equal(g.provider.requests.length, 2)
  assert.equal(turn.usage.cost_usd, 0.02)
  // The reservation asked the provider for no more than it was priced at.
  assert.equal(g.provider.requests[0]?.body.max_tokens, 5)
})

test('a turn request\'s budget_usd lowers the turn budget, and one above budgets.turn_usd is refused', async (t) => {
  const g = await gateway(t, { turn_usd: 0.025 })
  g.provider.enqueue(...toolForever(10))
  const { turn } = await runTurn(g, { message: 'keep reading', budget_usd: 0.015 })
  assert.equal(turn.status, 'failed')
  assert.equal(g.provider.requests.length, 1)

  const res = await g.http('POST', '/v1/turns', { message: 'x', budget_usd: 1 })
  assert.equal(res.status, 400)
  assert.equal(res.body.code, 'INVALID_REQUEST')
})

async function concurrentTurns (gateways: readonly TestGateway[], n: number): Promise<Array<{ status: number, turn?: any, body: any }>> {
  return await Promise.all(Array.from({ length: n }, async (_, i) => {
    const g = gateways[i % gateways.length] as TestGateway
    const res = await g.http('POST', '/v1/turns', { message: `turn ${i}` })
    if (res.status !== 202) return { status: res.status, body: res.body }
    return { status: res.status, body: res.body, turn: await finishedTurn(g, res.body.turn_id) }
  }))
}

function assertTenantBudgetHeld (results: ReadonlyArray<{ status: number, turn?: any, body: any }>, provider: FakeProvider): void {
  assert.ok(provider.requests.length <= 5, `${provider.requests.length} model calls reached the provider`)
  const completed = results.filter((r) => r.turn?.status === 'completed').length
  assert.equal(completed, provider.requests.length)
  assert.ok(completed >= 1)
  for (const r of results) {
    if (r.turn?.status === 'completed') continue
    if (r.status === 202) {
      assert.equal(r.turn.status, 'failed')
      assert.equal(r.turn.error?.code, 'BUDGET_EXCEEDED')
    } else {
      assert.equal(r.status, 402)
      assert.equal(r.body.code, 'BUDGET_EXCEEDED')
    }
  }
}

test('tenant_daily_usd worth 4 calls and 10 concurrent one-call turns: at most 5 calls reach the provider, the rest fail BUDGET_EXCEEDED', async (t) => {
  const g = await gateway(t, { tenant_daily_usd: 0.04 })
  g.provider.enqueue(...answers(10))
  const results = await concurrentTurns([g], 10)
  assertTenantBudgetHeld(results, g.provider)
  // Over its daily budget, the tenant's next turn is refused with problem JSON.
  const res = await g.http('POST', '/v1/turns', { message: 'one more' })
  assert.equal(res.status, 402)
  assert.equal(res.body.code, 'BUDGET_EXCEEDED')
  assert.match(String(res.headers.get('content-type')), /^application\/problem\+json/)
})

test('the tenant budget holds on SQLite across restarts of the gateway', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-budget-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const store = { kind: 'sqlite', sqlite: { path: join(dir, 'tollgate.db') } }
  const provider = await startFakeProvider()
  t.after(async () => { await provider.close() })
  provider.enqueue(...answers(10))
  const first = await startGateway({ provider, overrides: { providers: { fake: PRICED }, budgets: { tenant_daily_usd: 0.02 }, store } })
  await runTurn(first, { message: 'one' })
  await runTurn(first, { message: 'two' })
  await first.close()
  const second = await startGateway({ provider, overrides: { providers: { fake: PRICED }, budgets: { tenant_daily_usd: 0.02 }, store } })
  t.after(async () => { await second.close() })
  const res = await second.http('POST', '/v1/turns', { message: 'three' })
  assert.equal(res.status, 402)
  assert.equal(provider.requests.length, 2)
})

test('two instances on PostgreSQL share the tenant budget: 10 concurrent turns, at most 5 model calls', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  provider.enqueue(...answers(10))
  const store = { kind: 'postgres', postgres: { url: PG_URL, schema: scratchSchema(defer) } }
  const a = await gateway(t, { tenant_daily_usd: 0.04 }, { store }, provider)
  const b = await gateway(t, { tenant_daily_usd: 0.04 }, { store }, provider)
  const results = await concurrentTurns([a, b], 10)
  assertTenantBudgetHeld(results, provider)
})

/** Waits until the turn lists a pending approval and returns it. */
async function pendingApproval (g: TestGateway, turnId: string): Promise<any> {
  let pending: any
  await eventually(async () => {
    const res = await g.http('GET', `/v1/turns/${turnId}`)
    pending = res.body.pending_approvals?.[0]
    return pending !== undefined
  }, { what: `a pending approval of ${turnId}` })
  return pending
}

test('on_exceeded = "ask": the turn waits with a budget approval; yes raises the turn budget by its own size and the turn goes on', async (t) => {
  const g = await gateway(t, { turn_usd: 0.015, on_exceeded: 'ask' })
  g.provider.enqueue(...toolForever(2), { text: 'done', usage: CALL })
  const started = await startTurn(g, { message: 'keep reading' })

  const first = await pendingApproval(g, started.turn_id)
  assert.equal(first.approval_kind, 'budget')
  assert.equal(first.tool, 'budget')
  assert.deepEqual(first.display.map((d: { name: string }) => d.name), ['budget', 'spent', 'limit', 'next call'])
  assert.equal(g.provider.requests.length, 1)
  const listed = await g.http('GET', '/v1/approvals?status=pending')
  assert.deepEqual(listed.body.items.map((i: { request_id: string }) => i.request_id), [first.request_id])
  const answer = await g.http('POST', `/v1/approvals/${first.request_id as string}`, { decision: 'yes' })
  assert.equal(answer.status, 200)

  // Raised to 0.03: the second and third calls fit; a fourth would ask again.
  const done = await finishedTurn(g, started.turn_id)
  assert.equal(done.status, 'completed')
  assert.equal(g.provider.requests.length, 3)
  assert.equal(done.usage.cost_usd, 0.03)
  assert.deepEqual(done.approvals.map((a: { tool: string, decision: string }) => [a.tool, a.decision]), [['budget', 'yes']])
  const events = await turnEvents(g, started.turn_id)
  const requested = events.filter((e) => e.event.kind === 'approval.requested').map((e) => e.event)
  assert.deepEqual(requested.map((e) => e.kind === 'approval.requested' ? e.approval_kind : null), ['budget'])
  assert.equal(events.filter((e) => e.event.kind === 'approval.resolved').length, 1)
})

test('on_exceeded = "ask": no fails the turn with BUDGET_EXCEEDED and no further call is made', async (t) => {
  const g = await gateway(t, { turn_usd: 0.015, on_exceeded: 'ask' })
  g.provider.enqueue(...toolForever(5))
  const started = await startTurn(g, { message: 'keep reading' })
  const pending = await pendingApproval(g, started.turn_id)
  await g.http('POST', `/v1/approvals/${pending.request_id as string}`, { decision: 'no' })
  const done = await finishedTurn(g, started.turn_id)
  assert.equal(done.status, 'failed')
  assert.equal(done.error.code, 'BUDGET_EXCEEDED')
  assert.equal(g.provider.requests.length, 1)
  assert.deepEqual(done.approvals.map((a: { tool: string, decision: string }) => [a.tool, a.decision]), [['budget', 'no']])
})
