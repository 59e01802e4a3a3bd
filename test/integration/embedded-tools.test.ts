/**
 * `tool()` of the embedding API inside the real gateway: a zod schema parses the arguments, the
 * context carries the turn and tenant, and the tool's own approval condition only settles what the
 * risk profile leaves to its default.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { z } from 'zod'
import { tool } from '../../src/embed/index.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { finishedTurn, runTurn, startTurn } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

interface Seen { args: unknown, turnId: string, tenant: string }

function refundTool (seen: Seen[], needsApproval: (a: { amount: number }) => boolean): ReturnType<typeof tool> {
  return tool({
    name: 'refund',
    description: 'Refund an order',
    parameters: z.object({ order_id: z.string(), amount: z.number().positive() })
      .transform((a) => ({ ...a, cents: Math.round(a.amount * 100) })),
    needsApproval: (a) => needsApproval(a),
    async execute (args, ctx) {
      seen.push({ args, turnId: ctx.turnId, tenant: ctx.tenant })
      return { refunded: args.cents }
    }
  })
}

async function gateway (
  t: TestContext, seen: Seen[], condition: (a: { amount: number }) => boolean, risk: unknown = {}
): Promise<TestGateway> {
  const g = await startGateway({
    tools: [refundTool(seen, condition)],
    overrides: { agents: { default: { tools: ['refund'] } }, risk_profiles: { default: risk } }
  })
  t.after(() => g.close())
  return g
}

function script (g: TestGateway, amount: number): void {
  g.provider.enqueue({ toolCalls: [{ id: 'r', name: 'refund', arguments: { order_id: 'A', amount } }] }, { text: 'ok' })
}

test('an embedded tool gets the parsed arguments and its turn; a JSON value result is the output and the data', async (t) => {
  const seen: Seen[] = []
  const g = await gateway(t, seen, (a) => a.amount > 100)
  script(g, 12.5)
  const { turn } = await runTurn(g, { message: 'refund' })
  assert.deepEqual(seen, [{ args: { order_id: 'A', amount: 12.5, cents: 1250 }, turnId: turn.turn_id, tenant: 'local' }])
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.status, c.output]), [['ok', '{"refunded":1250}']])
  assert.deepEqual(turn.approvals, [])
})

test('always_ask in the risk profile asks even when the tool\'s condition would not', async (t) => {
  const seen: Seen[] = []
  const g = await gateway(t, seen, () => false, { always_ask: ['refund'] })
  script(g, 5)
  const { turn_id: turnId } = await startTurn(g, { message: 'refund' })
  let pending: any
  await eventually(async () => {
    pending = (await g.http('GET', `/v1/turns/${turnId}`)).body.pending_approvals[0]
    return pending !== undefined
  }, { what: 'the approval request' })
  assert.match(pending.reason, /always_ask/)
  assert.equal((await g.http('POST', `/v1/approvals/${pending.request_id as string}`, { decision: 'no' })).status, 200)
  const turn = await finishedTurn(g, turnId)
  assert.deepEqual(turn.tool_calls.map((c: any) => c.status), ['denied'])
  assert.deepEqual(seen, [])
})

test('a condition that throws asks, and auto_approve lets a call through whatever the condition says', async (t) => {
  const seen: Seen[] = []
  const g = await gateway(t, seen, () => { throw new Error('no answer') })
  script(g, 5)
  const { turn_id: turnId } = await startTurn(g, { message: 'refund' })
  let pending: any
  await eventually(async () => {
    pending = (await g.http('GET', `/v1/turns/${turnId}`)).body.pending_approvals[0]
    return pending !== undefined
  }, { what: 'the approval request' })
  assert.match(pending.reason, /condition failed/)
  assert.equal((await g.http('DELETE', `/v1/turns/${turnId}`)).status, 200)

  const approved = await gateway(t, seen, () => true, { auto_approve: ['refund'] })
  script(approved, 7)
  const { turn } = await runTurn(approved, { message: 'refund' })
  assert.deepEqual(turn.tool_calls.map((c: any) => c.status), ['ok'])
  assert.deepEqual(turn.approvals, [])
})
