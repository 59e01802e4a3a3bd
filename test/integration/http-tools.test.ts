/**
 * `http_tools`: a loopback endpoint (a real HTTP server) receives each call signed as a Standard
 * Webhook, verified here with the `standardwebhooks` library, and its answer becomes the result.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { runTurn, startTurn } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'
import { loadConfig } from '../../src/core/config.js'
import { buildServer } from '../../src/app/server.js'

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

interface Received { headers: IncomingMessage['headers'], body: string, verified: unknown }

type Answer = (n: number, body: any) => { status: number, body: unknown }

async function startReceiver (t: TestContext, answer: Answer): Promise<{ url: string, received: Received[] }> {
  const received: Received[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => { body += chunk })
    req.on('end', () => {
      let verified: unknown = null
      try {
        verified = new Webhook(SECRET).verify(body, req.headers as Record<string, string>)
      } catch {}
      received.push({ headers: req.headers, body, verified })
      const reply = answer(received.length, verified)
      res.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body))
    })
  })
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  t.after(() => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve) }))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/tools/refund`, received }
}

const REFUND_PARAMETERS = {
  type: 'object',
  properties: { order_id: { type: 'string' }, amount: { type: 'number' } },
  required: ['order_id', 'amount'],
  additionalProperties: false
}

async function gatewayWith (t: TestContext, declaration: Record<string, unknown>): Promise<TestGateway> {
  const g = await startGateway({
    env: { REFUND_SECRET: SECRET },
    overrides: {
      http_tools: { refund: { description: 'Refund an order', parameters: REFUND_PARAMETERS, secret_env: 'REFUND_SECRET', ...declaration } },
      agents: { default: { tools: ['refund'] } }
    }
  })
  t.after(() => g.close())
  return g
}

function refundCall (g: TestGateway, amount: number): void {
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'refund', arguments: { order_id: 'A-1', amount } }] }, { text: 'Done.' })
}

test('an HTTP tool receives the call signed as a Standard Webhook and its answer becomes the result', async (t) => {
  const receiver = await startReceiver(t, (_n, body) => ({ status: 200, body: { output: `refunded ${String(body?.arguments?.amount)}`, data: { refund_id: 'r-9' } } }))
  const g = await gatewayWith(t, { url: receiver.url, allow_private: true, needs_approval: { when: { '>': [{ var: 'amount' }, 100] } } })
  refundCall(g, 50)
  const { turn } = await runTurn(g, { message: 'refund 50' })
  assert.equal(turn.status, 'completed')
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.name, c.status, c.output]), [['refund', 'ok', 'refunded 50']])
  assert.deepEqual(turn.approvals, [])
  assert.equal(receiver.received.length, 1)
  const [call] = receiver.received
  assert.deepEqual(call?.verified, {
    tool: 'refund', call_id: turn.tool_calls[0].call_id, turn_id: turn.turn_id, tenant: 'local', arguments: { order_id: 'A-1', amount: 50 }
  })
  assert.match(String(call?.headers['webhook-id']), /^msg_[0-9a-f]{32}$/)
})

test('a plan in an HTTP tool\'s answer becomes the plan of a tool.progress event before its result', async (t) => {
  const plan = [{ content: 'find the order', status: 'completed' }, { content: 'refund it', status: 'in_progress', priority: 'high' }, { content: 'junk' }]
  const receiver = await startReceiver(t, () => ({ status: 200, body: { output: 'refunded', plan } }))
  const g = await gatewayWith(t, { url: receiver.url, allow_private: true, needs_approval: { when: { '>': [{ var: 'amount' }, 100] } } })
  refundCall(g, 50)
  const { turn, events } = await runTurn(g, { message: 'refund 50' })
  assert.equal(turn.status, 'completed')
  const kinds = events.map((e) => e.event.kind)
  const progress = events.filter((e) => e.event.kind === 'tool.progress').map((e) => e.event)
  assert.deepEqual(progress, [{
    kind: 'tool.progress',
    call_id: turn.tool_calls[0].call_id,
    plan: [{ content: 'find the order', priority: 'medium', status: 'completed' }, { content: 'refund it', priority: 'high', status: 'in_progress' }]
  }])
  assert.ok(kinds.indexOf('tool.progress') < kinds.indexOf('tool_result'))
})

test('an HTTP tool\'s JSON Logic condition asks for approval when it holds', async (t) => {
  const receiver = await startReceiver(t, () => ({ status: 200, body: { output: 'refunded' } }))
  const g = await gatewayWith(t, { url: receiver.url, allow_private: true, risk: 'high', needs_approval: { when: { '>': [{ var: 'amount' }, 100] } } })
  refundCall(g, 500)
  const { turn_id: turnId } = await startTurn(g, { message: 'refund 500' })
  let pending: any
  await eventually(async () => {
    pending = (await g.http('GET', `/v1/turns/${turnId}`)).body.pending_approvals
    return pending.length === 1
  }, { what: 'the refund to wait for approval' })
  assert.equal(pending[0].risk, 'high')
  assert.equal(receiver.received.length, 0)
  assert.equal((await g.http('POST', `/v1/approvals/${String(pending[0].request_id)}`, { decision: 'no' })).status, 200)
  await eventually(async () => (await g.http('GET', `/v1/turns/${turnId}`)).body.status === 'completed', { what: 'the turn to end' })
  assert.equal(receiver.received.length, 0)
})

test('a 500 from a non-idempotent HTTP tool is not retried and becomes an error result', async (t) => {
  const receiver = await startReceiver(t, () => ({ status: 500, body: { error: 'boom' } }))
  const g = await gatewayWith(t, { url: receiver.url, allow_private: true, needs_approval: 'never' })
  refundCall(g, 5)
  const { turn } = await runTurn(g, { message: 'refund 5' })
  assert.equal(receiver.received.length, 1)
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.status, c.error]), [['error', 'the refund endpoint answered HTTP 500']])
})

test('an idempotent HTTP tool is retried after a 503 with the same webhook-id', async (t) => {
  const receiver = await startReceiver(t, (n) => n === 1 ? { status: 503, body: {} } : { status: 200, body: { output: 'refunded at last' } })
  const g = await gatewayWith(t, { url: receiver.url, allow_private: true, idempotent: true, needs_approval: 'never' })
  refundCall(g, 5)
  const { turn } = await runTurn(g, { message: 'refund 5' })
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.status, c.output]), [['ok', 'refunded at last']])
  assert.equal(receiver.received.length, 2)
  assert.equal(receiver.received[0]?.headers['webhook-id'], receiver.received[1]?.headers['webhook-id'])
  assert.ok(receiver.received.every((r) => r.verified !== null), 'both attempts are signed')
})

test('an HTTP tool on a loopback URL is refused without allow_private, and nothing is sent', async (t) => {
  const receiver = await startReceiver(t, () => ({ status: 200, body: { output: 'should not happen' } }))
  const g = await gatewayWith(t, { url: receiver.url, needs_approval: 'never' })
  refundCall(g, 5)
  const { turn } = await runTurn(g, { message: 'refund 5' })
  assert.equal(turn.tool_calls[0].status, 'error')
  assert.match(turn.tool_calls[0].error, /not allowed: 127\.0\.0\.1/)
  assert.equal(receiver.received.length, 0)
})

test('an answer longer than max_response_bytes is an error result', async (t) => {
  const receiver = await startReceiver(t, () => ({ status: 200, body: { output: 'x'.repeat(4096) } }))
  const g = await gatewayWith(t, { url: receiver.url, allow_private: true, needs_approval: 'never', max_response_bytes: 1024 })
  refundCall(g, 5)
  const { turn } = await runTurn(g, { message: 'refund 5' })
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.status, c.error]), [['error', 'the refund endpoint\'s answer is longer than 1024 bytes']])
})

test('a gateway whose HTTP tool secret is unset, or whose condition is not JSON Logic, does not start', async () => {
  const base = { description: 'd', url: 'https://example.com/t', secret_env: 'MISSING_SECRET' }
  const config = loadConfig({ env: {}, overrides: { store: { kind: 'memory' }, log: { level: 'silent' }, http_tools: { t: base } } })
  await assert.rejects(buildServer({ config, env: {} }), /http_tools\.t\.secret_env names MISSING_SECRET, which is not set/)
  const bad = loadConfig({ env: {}, overrides: { store: { kind: 'memory' }, log: { level: 'silent' }, http_tools: { t: { ...base, needs_approval: { when: { nope: [1] } } } } } })
  await assert.rejects(buildServer({ config: bad, env: { MISSING_SECRET: SECRET } }), /http_tools\.t\.needs_approval\.when is not a JSON Logic expression Tollgate can run: Unknown Operator "nope"/)
})
