import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ReceiptKeyring } from '../../src/receipts/keyring.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'
import { createProbes, probeOverrides, type Probes } from '../helpers/tools.js'
import type { EventEnvelope, TurnEvent } from '../../schemas/events.js'

const RECEIPT = /^tg-receipt-\d+-[A-Za-z0-9_-]{43}$/

async function setup (
  t: { after: (fn: () => Promise<void>) => void }, receipts: Record<string, unknown> = {}, extra: Record<string,
  unknown> = {}
): Promise<{ g: TestGateway, probes: Probes }> {
  const probes = createProbes()
  const g = await startGateway({
    tools: probes.tools,
    overrides: probeOverrides({ runtime_profiles: { default: { tool_receipts: { enabled: true, ...receipts } } }, ...extra })
  })
  t.after(async () => { await g.close() })
  return { g, probes }
}

const probe = (id: string, args: Record<string, unknown>): { id: string, name: string, arguments: Record<string, unknown> } => ({ id, name: 'probe', arguments: args })

type ToolCall = Extract<TurnEvent, { kind: 'tool_call' }>
type ToolResult = Extract<TurnEvent, { kind: 'tool_result' }>

function calls (events: readonly EventEnvelope[]): ToolCall[] {
  return events.flatMap((e) => e.event.kind === 'tool_call' ? [e.event] : [])
}

function results (events: readonly EventEnvelope[]): ToolResult[] {
  return events.flatMap((e) => e.event.kind === 'tool_result' ? [e.event] : [])
}

async function runOverWs (g: TestGateway, body: Record<string, unknown> = {}): Promise<{ turnId: string, events: EventEnvelope[] }> {
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go', ...body })
  return { turnId: accepted.turn_id, events: await ws.waitForTerminal(accepted.turn_id) }
}

/** The verify body a client builds from the events of a successful call. */
function verifyBody (turnId: string, call: ToolCall, result: ToolResult): Record<string, unknown> {
  return {
    receipt: result.receipt, turn_id: turnId, call_id: call.call_id, tool: call.name, arguments: call.arguments,
    output: result.output
  }
}

test('a successful tool result carries a receipt in its event, in the turn record and in the model-visible history', async (t) => {
  const { g } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' })] }, { text: 'done' })
  const { turnId, events } = await runOverWs(g)
  const [result] = results(events)
  assert.ok(result !== undefined && result.status === 'ok')
  assert.match(result.receipt ?? '', RECEIPT)
  const turn = await g.http('GET', `/v1/turns/${turnId}`)
  assert.equal(turn.body.tool_calls[0].receipt, result.receipt)
  const toolMessage = g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')
  assert.equal(toolMessage?.content, `done a\n\n[receipt: ${result.receipt ?? ''}]`)
})

test('the system prompt explains receipts unless inject_system_prompt is off', async (t) => {
  const { g } = await setup(t)
  g.provider.enqueue({ text: 'hi' })
  await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.match(g.provider.requests[0]?.body.messages[0]?.content ?? '', /## Tool Execution Receipts/)

  const quiet = await setup(t, { inject_system_prompt: false })
  quiet.g.provider.enqueue({ text: 'hi' })
  await quiet.g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.doesNotMatch(quiet.g.provider.requests[0]?.body.messages[0]?.content ?? '', /Receipts/)
})

test('show_in_response appends a receipts block to the final text', async (t) => {
  const { g } = await setup(t, { show_in_response: true })
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' }), probe('c2', { label: 'b' })] }, { text: 'both done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  const [first, second] = res.body.tool_calls as Array<{ receipt: string }>
  assert.equal(res.body.final_text, `both done\n\n---\nTool receipts:\n  probe: ${first?.receipt ?? ''}\n  probe: ${second?.receipt ?? ''}`)
})

test('receipts are off by default: no receipt, no history suffix, no prompt section', async (t) => {
  const probes = createProbes()
  const g = await startGateway({ tools: probes.tools, overrides: probeOverrides() })
  t.after(async () => { await g.close() })
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' })] }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.equal(res.body.tool_calls[0].status, 'ok')
  assert.equal(res.body.tool_calls[0].receipt, undefined)
  assert.equal(g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')?.content, 'done a')
  assert.doesNotMatch(g.provider.requests[0]?.body.messages[0]?.content ?? '', /Receipts/)
})

test('a turn\'s receipt key is derived only when its agent signs receipts', async (t) => {
  const derived = t.mock.method(ReceiptKeyring.prototype, 'keyFor')
  const probes = createProbes()
  const off = await startGateway({ tools: probes.tools, overrides: probeOverrides() })
  t.after(async () => { await off.close() })
  off.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' }), probe('c2', { label: 'b' })] }, { text: 'done' })
  assert.equal((await off.http('POST', '/v1/turns?wait=true', { message: 'go' })).body.status, 'completed')
  assert.equal(derived.mock.callCount(), 0)
  const { g } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' }), probe('c2', { label: 'b' })] }, { text: 'done' })
  const on = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  assert.match(on.body.tool_calls[1].receipt, RECEIPT)
  // One derivation for the turn, whatever its number of signed calls.
  assert.equal(derived.mock.callCount(), 1)
})

test('a denied call gets no receipt', async (t) => {
  const { g, probes } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'x' } }] }, { text: 'ok' })
  const { events } = await runOverWs(g, { interactive: false })
  assert.deepEqual(results(events).map((r) => [r.status, r.receipt]), [['denied', undefined]])
  assert.doesNotMatch(g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')?.content ?? '', /receipt/)
  assert.equal(probes.runs.length, 0)
})

test('a call replaced by the operator gets no receipt although it counts as successful', async (t) => {
  const { g } = await setup(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'x' } }] }, { text: 'ok' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const asked = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  assert.ok(asked.event.kind === 'approval.requested')
  await ws.request({ type: 'approval.respond', request_id: asked.event.request_id, decision: 'edit', replacement: 'pretend it ran' })
  const events = await ws.waitForTerminal(accepted.turn_id)
  assert.deepEqual(results(events).map((r) => [r.status, r.success, r.receipt]), [['replaced', true, undefined]])
  assert.equal(g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')?.content, 'pretend it ran')
})

test('a failed execution gets no receipt', async (t) => {
  const { g, probes } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a', fail: true })] }, { text: 'ok' })
  const { events } = await runOverWs(g)
  assert.deepEqual(results(events).map((r) => [r.status, r.receipt]), [['error', undefined]])
  assert.equal(probes.runs[0]?.finished, true, 'it really ran')
})

test('an interrupted call gets no receipt', async (t) => {
  const { g } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'slow', ms: 10_000 })] })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'tool_call')
  await ws.request({ type: 'cancel', turn_id: accepted.turn_id })
  const events = await ws.waitForTerminal(accepted.turn_id)
  assert.deepEqual(results(events).map((r) => [r.status, r.receipt]), [['interrupted', undefined]])
})

test('a deduplicated call gets no receipt while the call it repeats keeps its own', async (t) => {
  const { g, probes } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'same' }), probe('c2', { label: 'same' })] }, { text: 'ok' })
  const { events } = await runOverWs(g)
  const [first, second] = results(events)
  assert.deepEqual([first?.status, second?.status, second?.receipt], ['ok', 'deduplicated', undefined])
  assert.match(first?.receipt ?? '', RECEIPT)
  assert.equal(probes.runs.length, 1)
})

test('POST /v1/receipts/verify confirms a real receipt built from the events', async (t) => {
  const { g } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a', output: 'forty-two' })] }, { text: 'done' })
  const { turnId, events } = await runOverWs(g)
  const [call] = calls(events)
  const [result] = results(events)
  assert.ok(call !== undefined && result !== undefined)
  const res = await g.http('POST', '/v1/receipts/verify', verifyBody(turnId, call, result))
  assert.equal(res.status, 200)
  assert.deepEqual(res.body, { valid: true })
})

test('a receipt no longer verifies once the output, arguments, tool, call or turn is changed', async (t) => {
  const { g } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a', output: 'forty-two' })] }, { text: 'done' }, { text: 'second turn' })
  const { turnId, events } = await runOverWs(g)
  const other = await g.http('POST', '/v1/turns?wait=true', { message: 'another' })
  const [call] = calls(events)
  const [result] = results(events)
  assert.ok(call !== undefined && result !== undefined)
  const body = verifyBody(turnId, call, result)
  for (const tampered of [
    { output: 'forty-three' },
    { arguments: { ...call.arguments, label: 'b' } },
    { tool: 'quiet' },
    { call_id: 'call_someone_else' },
    { turn_id: other.body.turn_id }
  ]) {
    const res = await g.http('POST', '/v1/receipts/verify', { ...body, ...tampered })
    assert.deepEqual([res.status, res.body], [200, { valid: false, reason: 'mismatch' }], JSON.stringify(tampered))
  }
})

test('a string that is not a receipt is answered as malformed', async (t) => {
  const { g } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' })] }, { text: 'done' })
  const { turnId, events } = await runOverWs(g)
  const [call] = calls(events)
  const [result] = results(events)
  assert.ok(call !== undefined && result !== undefined)
  for (const receipt of ['not-a-receipt', 'tg-receipt-', 'tg-receipt-abc-x', 'tg-receipt-123-']) {
    const res = await g.http('POST', '/v1/receipts/verify', { ...verifyBody(turnId, call, result), receipt })
    assert.deepEqual(res.body, { valid: false, reason: 'malformed' }, receipt)
  }
})

const MASTER_1 = randomBytes(32).toString('base64')
const MASTER_2 = randomBytes(32).toString('base64')
const KEYS_ENV = { RECEIPT_K1: MASTER_1, RECEIPT_K2: MASTER_2 }

/** A gateway on one SQLite file with the given receipt master keys: closing and starting again is a restart. */
type After = { after: (fn: () => Promise<void>) => void }

async function durable (t: After, path: string, keys: Array<{ id: string, secret_env: string }>): Promise<TestGateway> {
  const probes = createProbes()
  const g = await startGateway({
    tools: probes.tools,
    env: KEYS_ENV,
    overrides: probeOverrides({
      runtime_profiles: { default: { tool_receipts: { enabled: true } } },
      store: { kind: 'sqlite', sqlite: { path } },
      receipts: { keys }
    })
  })
  t.after(async () => { await g.close() })
  return g
}

/** Runs one probe call and answers the verify body of its receipt. */
async function signedCall (g: TestGateway): Promise<Record<string, unknown>> {
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' })] }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  const record = res.body.tool_calls[0]
  return {
    receipt: record.receipt, turn_id: res.body.turn_id, call_id: record.call_id, tool: record.name, arguments: record.arguments,
    output: record.output
  }
}

async function scratchDb (t: After): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-receipts-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  return join(dir, 'tollgate.db')
}

test('a receipt still verifies after a restart when the gateway keeps its master key', async (t) => {
  const path = await scratchDb(t)
  const first = await durable(t, path, [{ id: 'k1', secret_env: 'RECEIPT_K1' }])
  const body = await signedCall(first)
  await first.close()
  const again = await durable(t, path, [{ id: 'k1', secret_env: 'RECEIPT_K1' }])
  assert.deepEqual((await again.http('POST', '/v1/receipts/verify', body)).body, { valid: true })
  const altered = await again.http('POST', '/v1/receipts/verify', { ...body, output: 'something else' })
  assert.deepEqual(altered.body, { valid: false, reason: 'mismatch' })
})

test('after a rotation an old turn verifies while its key is listed, and answers key_unavailable once the key is retired', async (t) => {
  const path = await scratchDb(t)
  const first = await durable(t, path, [{ id: 'k1', secret_env: 'RECEIPT_K1' }])
  const old = await signedCall(first)
  await first.close()
  const rotated = await durable(t, path, [{ id: 'k2', secret_env: 'RECEIPT_K2' }, { id: 'k1', secret_env: 'RECEIPT_K1' }])
  const fresh = await signedCall(rotated)
  assert.deepEqual((await rotated.http('POST', '/v1/receipts/verify', old)).body, { valid: true })
  assert.deepEqual((await rotated.http('POST', '/v1/receipts/verify', fresh)).body, { valid: true })
  await rotated.close()
  const retired = await durable(t, path, [{ id: 'k2', secret_env: 'RECEIPT_K2' }])
  assert.deepEqual((await retired.http('POST', '/v1/receipts/verify', old)).body, { valid: false, reason: 'key_unavailable' })
  assert.deepEqual((await retired.http('POST', '/v1/receipts/verify', fresh)).body, { valid: true })
})

test('without configured master keys a receipt verifies in its process and answers key_unavailable after a restart', async (t) => {
  const path = await scratchDb(t)
  const first = await durable(t, path, [])
  const body = await signedCall(first)
  assert.deepEqual((await first.http('POST', '/v1/receipts/verify', body)).body, { valid: true })
  await first.close()
  const again = await durable(t, path, [])
  assert.deepEqual((await again.http('POST', '/v1/receipts/verify', body)).body, { valid: false, reason: 'key_unavailable' })
})

test('the turn record a client reads does not name the receipt master key', async (t) => {
  const path = await scratchDb(t)
  // A key id long enough that it cannot turn up by chance inside a base64 MAC or a random id.
  const g = await durable(t, path, [{ id: 'receipt-master-key-one', secret_env: 'RECEIPT_K1' }])
  const body = await signedCall(g)
  const turn = await g.http('GET', `/v1/turns/${body.turn_id as string}`)
  assert.equal(turn.status, 200)
  assert.equal('receipt_key_id' in turn.body, false)
  assert.equal(JSON.stringify(turn.body).includes('receipt-master-key-one'), false)
})

test('verifying against an unknown turn answers 404 TURN_NOT_FOUND', async (t) => {
  const { g } = await setup(t)
  const res = await g.http('POST', '/v1/receipts/verify', {
    receipt: 'tg-receipt-1-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', turn_id: 'turn_missing', call_id: 'c', tool: 'probe', arguments: {}, output: ''
  })
  assert.deepEqual([res.status, res.body.code], [404, 'TURN_NOT_FOUND'])
})

test('a verify body that does not match the schema is refused with INVALID_REQUEST', async (t) => {
  const { g } = await setup(t)
  const base = { receipt: 'x', turn_id: 't', call_id: 'c', tool: 'probe', arguments: {}, output: '' }
  for (const body of [
    { ...base, receipt: undefined },
    { ...base, arguments: 'not an object' },
    { ...base, receipt: 'x'.repeat(257) },
    { ...base, extra: true }
  ]) {
    const res = await g.http('POST', '/v1/receipts/verify', body)
    assert.deepEqual([res.status, res.body.code], [400, 'INVALID_REQUEST'], JSON.stringify(body).slice(0, 80))
  }
})

test('a receipt is bound to its turn: presented under the next turn of the session it does not verify', async (t) => {
  const { g } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' })] }, { text: 'one' }, { toolCalls: [probe('c1', { label: 'a' })] }, { text: 'two' })
  const first = await g.http('POST', '/v1/turns?wait=true', { message: 'go', session_id: 's-keys' })
  const second = await g.http('POST', '/v1/turns?wait=true', { message: 'go', session_id: 's-keys' })
  const a = first.body.tool_calls[0]
  const b = second.body.tool_calls[0]
  assert.notEqual(a.receipt, b.receipt)
  const crossed = await g.http('POST', '/v1/receipts/verify', { receipt: a.receipt, turn_id: second.body.turn_id, call_id: a.call_id, tool: 'probe', arguments: a.arguments, output: a.output })
  assert.deepEqual(crossed.body, { valid: false, reason: 'mismatch' })
  const own = await g.http('POST', '/v1/receipts/verify', { receipt: b.receipt, turn_id: second.body.turn_id, call_id: b.call_id, tool: 'probe', arguments: b.arguments, output: b.output })
  assert.deepEqual(own.body, { valid: true })
})

test('with JWT auth only the turn\'s owner may verify, and only with the turns:read scope', async (t) => {
  const probes = createProbes()
  const g = await startGateway({
    tools: probes.tools,
    overrides: probeOverrides({ ...jwtAuth(), runtime_profiles: { default: { tool_receipts: { enabled: true } } } })
  })
  t.after(async () => { await g.close() })
  const owner = await mintToken({ tenant: 'acme', sub: 'alice' })
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' })] }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go' }, bearer(owner))
  const record = res.body.tool_calls[0]
  const body = {
    receipt: record.receipt, turn_id: res.body.turn_id, call_id: record.call_id, tool: record.name,
    arguments: record.arguments, output: record.output
  }
  assert.deepEqual((await g.http('POST', '/v1/receipts/verify', body, bearer(owner))).body, { valid: true })
  const stranger = await g.http('POST', '/v1/receipts/verify', body, bearer(await mintToken({ tenant: 'globex', sub: 'alice' })))
  assert.deepEqual([stranger.status, stranger.body.code], [404, 'TURN_NOT_FOUND'])
  const writeOnly = await g.http('POST', '/v1/receipts/verify', body, bearer(await mintToken({ tenant: 'acme', sub: 'alice', scopes: ['turns:write'] })))
  assert.deepEqual([writeOnly.status, writeOnly.body.code], [403, 'FORBIDDEN'])
  const anonymous = await g.http('POST', '/v1/receipts/verify', body)
  assert.equal(anonymous.status, 401)
})
