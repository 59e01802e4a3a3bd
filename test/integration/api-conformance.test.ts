/**
 * Live answers against openapi.yaml: every route of the document is called for its success and
 * the gateway's error classes (400, 401, 403, 404, 409, 410, 413, 415, 426, 429, 431) are
 * provoked; each answer's status must be documented for its operation, its media type must be one
 * the document gives, its body must validate (ajv, JSON Schema 2020-12) against the documented
 * schema, and every header the document marks required must be there and valid. The last test
 * fails when a route of the document was never called here.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { WebSocket } from 'ws'
import { parse } from 'yaml'
import type { TestGateway } from '../helpers/gateway.js'
import { mintToken, jwtAuth } from '../helpers/tokens.js'
import { startProbeGateway } from '../helpers/tools.js'
import { gate } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

type Json = Record<string, any>
type AddFormats = (ajv: Ajv2020) => Ajv2020
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats

const doc = parse(readFileSync('openapi.yaml', 'utf8')) as Json
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }))
const validators = new Map<string, ValidateFunction>()
/** `METHOD /path/{template} STATUS` of every answer checked here. */
const checked = new Set<string>()

interface Answer { status: number, headers: IncomingHttpHeaders, body: string }

function resolveRef (node: unknown): Json {
  const ref = (node as Json | undefined)?.$ref
  if (typeof ref !== 'string') return node as Json
  const target = ref.slice(2).split('/').reduce<any>((at, key) => at?.[key], doc)
  assert.ok(target !== undefined, `dangling $ref ${ref}`)
  return resolveRef(target)
}

/** Inlines every $ref so ajv sees one self-contained schema. */
function inline (node: unknown): unknown {
  if (Array.isArray(node)) return node.map(inline)
  if (typeof node !== 'object' || node === null) return node
  if (typeof (node as Json).$ref === 'string') return inline(resolveRef(node))
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, inline(v)]))
}

function validate (schema: unknown, value: unknown, where: string): void {
  const plain = inline(schema)
  const key = JSON.stringify(plain)
  let fn = validators.get(key)
  if (fn === undefined) {
    fn = ajv.compile(plain as object)
    validators.set(key, fn)
  }
  assert.ok(fn(value), `${where}: ${ajv.errorsText(fn.errors)}\n${JSON.stringify(value).slice(0, 500)}`)
}

/**
 * Checks one live answer against the document (and its status against `expected` when given);
 * `template` null is a path the document does not list.
 */
function conforms (method: string, template: string | null, answer: Answer, expected?: number): void {
  const where = `${method} ${template ?? '(unlisted path)'} → ${answer.status}`
  if (expected !== undefined) assert.equal(answer.status, expected, `${where}: ${answer.body}`)
  let response: Json | undefined
  if (template === null) {
    response = answer.status === 404 ? resolveRef({ $ref: '#/components/responses/NotFound' }) : undefined
  } else {
    const op = doc.paths[template]?.[method.toLowerCase()] as Json | undefined
    assert.ok(op !== undefined, `${method} ${template} is not in openapi.yaml`)
    response = op.responses[String(answer.status)] ?? (answer.status >= 400 ? op.responses.default : undefined)
  }
  assert.ok(response !== undefined, `${where} is not documented`)
  response = resolveRef(response)
  for (const [name, header] of Object.entries((response.headers ?? {}) as Json)) {
    const spec = resolveRef(header)
    const value = answer.headers[name.toLowerCase()]
    if (spec.required === true) assert.ok(value !== undefined, `${where} lacks its required ${name} header`)
    if (typeof value === 'string') validate(spec.schema, spec.schema?.type === 'integer' ? Number(value) : value, `${where} header ${name}`)
  }
  const content = response.content as Json | undefined
  if (content === undefined) {
    assert.equal(answer.body, '', `${where} documents no body`)
  } else {
    const media = String(answer.headers['content-type'] ?? '').split(';')[0]?.trim() ?? ''
    assert.ok(media in content, `${where} answered ${media}, documented: ${Object.keys(content).join(', ')}`)
    const schema = resolveRef(content[media].schema)
    validate(schema, schema.type === 'string' ? answer.body : JSON.parse(answer.body), `${where} body`)
  }
  checked.add(`${method} ${template ?? '(unlisted)'} ${answer.status}`)
}

interface CallOptions { body?: unknown, headers?: Record<string, string> }

async function call (g: TestGateway, method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers }
  let body: string | undefined
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
    headers['content-type'] ??= 'application/json'
  }
  const res = await fetch(`${g.url}${path}`, { method, headers, ...(body === undefined ? {} : { body }) })
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() }
}

/** The HTTP answer to a WebSocket upgrade: 101, or the refusal with its body. */
async function upgrade (g: TestGateway, headers: Record<string, string>, path = '/v1/ws', protocol = 'tollgate.v1'): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const ws = new WebSocket(g.wsUrl.replace(/\/v1\/ws$/, path), [protocol], { headers })
    ws.on('upgrade', (res) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' })
      ws.close()
    })
    ws.on('unexpected-response', (_req, res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body })
        res.destroy()
      })
    })
    ws.on('error', reject)
  })
}

/** A request whose headers are over Node's 16 KiB limit: refused before routing. */
async function oversized (g: TestGateway, method: string, path: string): Promise<Answer> {
  const { port } = new URL(g.url)
  return await new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: { 'x-filler': 'f'.repeat(20_000) } }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, body }) })
    })
    req.on('error', reject)
    req.end()
  })
}

/** A minimal AG-UI RunAgentInput and AI SDK chat request for one user message. */
function agUiInput (threadId: string): Json {
  return { threadId, runId: `run-${threadId}`, messages: [{ id: 'm1', role: 'user', content: 'hi' }], tools: [], context: [], state: {} }
}

function aiSdkChat (id: string): Json {
  return { id, trigger: 'submit-message', messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] }
}

interface Setup { g: TestGateway, auth: Record<string, string>, token: string }

async function setup (t: { after: (fn: () => Promise<void>) => void }, extra: Record<string, unknown> = {}): Promise<Setup> {
  const token = await mintToken()
  const { g } = await startProbeGateway(t, { ...jwtAuth(), ...extra }, { token })
  return { g, token, auth: { authorization: `Bearer ${token}` } }
}

/** A finished turn with one approved `risky` call and its receipt: ids for the routes that need them. */
async function finishedTurn (s: Setup): Promise<{ turnId: string, sessionId: string, requestId: string, call: Json, result: Json }> {
  s.g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'risky', arguments: { label: 'x' } }] }, { text: 'done' })
  const socket = await s.g.socket()
  const accepted = await socket.request({ type: 'turn.start', message: 'go' })
  const requested = await socket.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  const requestId = (requested.event as Json).request_id as string
  const answered = await call(s.g, 'POST', `/v1/approvals/${requestId}`, { body: { decision: 'yes' }, headers: s.auth })
  conforms('POST', '/v1/approvals/{request_id}', answered)
  const events = await socket.waitForTerminal(accepted.turn_id)
  const call0 = events.find((e) => e.event.kind === 'tool_call')?.event as Json
  const result = events.find((e) => e.event.kind === 'tool_result')?.event as Json
  return { turnId: accepted.turn_id, sessionId: accepted.session_id, requestId, call: call0, result }
}

test('every route answers its success as documented', async (t) => {
  const s = await setup(t, { runtime_profiles: { default: { tool_receipts: { enabled: true } } } })
  const { g, auth } = s
  const turn = await finishedTurn(s)
  const open = ['/healthz', '/readyz', '/metrics', '/openapi.yaml', '/asyncapi.yaml', '/', '/ui/app.js', '/ui/app.css', '/ui/icon.svg',
    '/docs', '/docs/init.js', '/docs/redoc.standalone.js']
  for (const path of open) {
    const first = await call(g, 'GET', path)
    conforms('GET', path, first)
    const etag = first.headers.etag
    if (typeof etag === 'string') conforms('GET', path, await call(g, 'GET', path, { headers: { 'if-none-match': etag } }), 304)
  }
  conforms('GET', '/v1/turns/{id}', await call(g, 'GET', `/v1/turns/${turn.turnId}`, { headers: auth }))
  conforms('GET', '/v1/turns/{id}/events', await call(g, 'GET', `/v1/turns/${turn.turnId}/events?after_seq=1`, { headers: auth }))
  conforms('DELETE', '/v1/turns/{id}', await call(g, 'DELETE', `/v1/turns/${turn.turnId}`, { headers: auth }))
  conforms('GET', '/v1/sessions/{id}', await call(g, 'GET', `/v1/sessions/${turn.sessionId}`, { headers: auth }))
  conforms('GET', '/v1/sessions', await call(g, 'GET', '/v1/sessions?limit=5', { headers: auth }))
  conforms('GET', '/v1/turns', await call(g, 'GET', `/v1/turns?session_id=${turn.sessionId}&status=cancelled`, { headers: auth }))
  conforms('GET', '/v1/approvals', await call(g, 'GET', '/v1/approvals?status=pending', { headers: auth }))
  const replayed = await call(g, 'GET', `/v1/turns/${turn.turnId}/events`, { headers: { ...auth, accept: 'text/event-stream' } })
  assert.match(replayed.body, /^id: 1\nevent: turn\.started\n/)
  conforms('GET', '/v1/turns/{id}/events', replayed, 200)
  const lastSeq = JSON.parse((await call(g, 'GET', `/v1/turns/${turn.turnId}`, { headers: auth })).body).last_seq as number
  const over = await call(g, 'GET', `/v1/turns/${turn.turnId}/events`, { headers: { ...auth, accept: 'text/event-stream', 'last-event-id': String(lastSeq) } })
  conforms('GET', '/v1/turns/{id}/events', over, 204)
  conforms('GET', '/v1/tools', await call(g, 'GET', '/v1/tools?agent=default', { headers: auth }))
  const verify = {
    receipt: turn.result.receipt,
    turn_id: turn.turnId,
    call_id: turn.call.call_id,
    tool: 'risky',
    arguments: turn.call.arguments,
    output: 'done x'
  }
  const verified = await call(g, 'POST', '/v1/receipts/verify', { body: verify, headers: auth })
  assert.deepEqual(JSON.parse(verified.body), { valid: true })
  conforms('POST', '/v1/receipts/verify', verified)
  const audit = await call(g, 'GET', '/v1/audit?format=jsonl', { headers: auth })
  assert.match(audit.body, /^\{"seq":1,/)
  conforms('GET', '/v1/audit', audit)
  conforms('GET', '/v1/ws', await upgrade(g, auth))
  conforms('GET', '/v1/acp', await upgrade(g, auth, '/v1/acp', 'tollgate.acp.v1'))
  conforms('POST', '/v1/turns/{id}/messages', await call(g, 'POST', `/v1/turns/${turn.turnId}/messages`, { body: { message: 'late' }, headers: auth }), 409)
  const schedule = await call(g, 'POST', '/v1/schedules', { body: { cron: '0 0 1 1 *', message: 'new year' }, headers: auth })
  conforms('POST', '/v1/schedules', schedule, 201)
  const scheduleId = JSON.parse(schedule.body).schedule_id as string
  conforms('GET', '/v1/schedules', await call(g, 'GET', '/v1/schedules', { headers: auth }))
  conforms('GET', '/v1/schedules/{id}', await call(g, 'GET', `/v1/schedules/${scheduleId}`, { headers: auth }))
  conforms('PATCH', '/v1/schedules/{id}', await call(g, 'PATCH', `/v1/schedules/${scheduleId}`, { body: { enabled: false }, headers: auth }))
  conforms('GET', '/v1/schedules/{id}/runs', await call(g, 'GET', `/v1/schedules/${scheduleId}/runs?limit=5`, { headers: auth }))
  conforms('DELETE', '/v1/schedules/{id}', await call(g, 'DELETE', `/v1/schedules/${scheduleId}`, { headers: auth }), 204)

  g.provider.enqueue({ text: 'accepted' }, { text: 'waited' }, { text: 'streamed' })
  const accepted = await call(g, 'POST', '/v1/turns', { body: { message: 'hi', session_id: 'conf-1' }, headers: auth })
  conforms('POST', '/v1/turns', accepted)
  const acceptedId = JSON.parse(accepted.body).turn_id as string
  const status = async (): Promise<string> => JSON.parse((await call(g, 'GET', `/v1/turns/${acceptedId}`, { headers: auth })).body).status
  await eventually(async () => await status() !== 'running', { what: 'the 202 turn ended' })
  const waited = await call(g, 'POST', '/v1/turns?wait=true', { body: { message: 'hi', session_id: 'conf-2' }, headers: auth })
  conforms('POST', '/v1/turns', waited, 200)
  const streamed = { ...auth, accept: 'text/event-stream' }
  const sse = await call(g, 'POST', '/v1/turns', { body: { message: 'hi', session_id: 'conf-3' }, headers: streamed })
  assert.match(sse.body, /^id: 1\nevent: turn\.started\n/)
  assert.match(String(sse.headers['x-turn-id']), /^turn_/)
  conforms('POST', '/v1/turns', sse)

  g.provider.enqueue({ text: 'ag-ui' }, { text: 'ai-sdk' })
  const run = await call(g, 'POST', '/v1/ag-ui', { body: agUiInput('conf-4'), headers: streamed })
  assert.match(run.body, /^data: \{"type":"RUN_STARTED"/)
  conforms('POST', '/v1/ag-ui', run)
  const chat = await call(g, 'POST', '/v1/ai-sdk/chat', { body: aiSdkChat('conf-5'), headers: auth })
  assert.equal(chat.headers['x-vercel-ai-ui-message-stream'], 'v1')
  assert.match(chat.body, /data: \[DONE\]\n\n$/)
  conforms('POST', '/v1/ai-sdk/chat', chat)

  const held = gate()
  g.provider.enqueue({ text: 'long', gate: held.promise }, { text: 'short' })
  const running = JSON.parse((await call(g, 'POST', '/v1/turns', { body: { message: 'hi', session_id: 'conf-6' }, headers: auth })).body).turn_id as string
  await eventually(() => g.provider.open() === 1, { what: 'the model call of the turn to steer' })
  conforms('POST', '/v1/turns/{id}/messages', await call(g, 'POST', `/v1/turns/${running}/messages`, { body: { message: 'shorter' }, headers: auth }), 202)
  held.open()
  await eventually(async () => JSON.parse((await call(g, 'GET', `/v1/turns/${running}`, { headers: auth })).body).status !== 'running', { what: 'the steered turn ended' })
  g.provider.enqueue({ toolCalls: [{ id: 'c', name: 'pick', arguments: {} }] }, { text: 'picked' })
  const clientTools = [{ name: 'pick', description: 'runs in the client', parameters: { type: 'object' } }]
  const picking = JSON.parse((await call(g, 'POST', '/v1/turns', { body: { message: 'pick', session_id: 'conf-6', client_tools: clientTools }, headers: auth })).body)
  let waiting: Json | undefined
  await eventually(async () => {
    waiting = JSON.parse((await call(g, 'GET', `/v1/turns/${picking.turn_id as string}`, { headers: auth })).body).pending_approvals[0]
    return waiting !== undefined
  }, { what: 'the client tool call to wait' })
  const delivered = await call(g, 'POST', `/v1/turns/${picking.turn_id as string}/tool-results`, { body: { call_id: waiting?.call_id, output: 'red' }, headers: auth })
  conforms('POST', '/v1/turns/{id}/tool-results', delivered, 200)
})

test('schema violations are 400 as documented, a bad after_seq among them', async (t) => {
  const { g, auth } = await setup(t)
  conforms('GET', '/v1/turns/{id}/events', await call(g, 'GET', '/v1/turns/turn_x/events?after_seq=minus-one', { headers: auth }), 400)
  conforms('GET', '/v1/turns/{id}', await call(g, 'GET', `/v1/turns/${'x'.repeat(129)}`, { headers: auth }), 400)
  conforms('DELETE', '/v1/turns/{id}', await call(g, 'DELETE', `/v1/turns/${'x'.repeat(500)}`, { headers: auth }), 400)
  conforms('GET', '/v1/turns/{id}', await call(g, 'GET', '/v1/turns/%E0%A4%A', { headers: auth }), 400)
  conforms('GET', '/v1/sessions/{id}', await call(g, 'GET', '/v1/sessions/has%20space', { headers: auth }), 400)
  conforms('GET', '/v1/tools', await call(g, 'GET', `/v1/tools?agent=${'a'.repeat(65)}`, { headers: auth }), 400)
  conforms('POST', '/v1/turns', await call(g, 'POST', '/v1/turns', { body: { message: '' }, headers: auth }), 400)
  conforms('POST', '/v1/turns', await call(g, 'POST', '/v1/turns', { body: '{"message":', headers: auth }), 400)
  conforms('POST', '/v1/turns', await call(g, 'POST', '/v1/turns', { body: { message: 'hi', agent: 'nobody' }, headers: auth }), 400)
  const maybe = { body: { decision: 'maybe' }, headers: auth }
  conforms('POST', '/v1/approvals/{request_id}', await call(g, 'POST', '/v1/approvals/apr_x', maybe), 400)
  conforms('POST', '/v1/receipts/verify', await call(g, 'POST', '/v1/receipts/verify', { body: { receipt: 'r' }, headers: auth }), 400)
  conforms('GET', '/v1/audit', await call(g, 'GET', '/v1/audit?format=csv', { headers: auth }), 400)
  conforms('POST', '/v1/schedules', await call(g, 'POST', '/v1/schedules', { body: { cron: 'never', message: 'm' }, headers: auth }), 400)
  conforms('PATCH', '/v1/schedules/{id}', await call(g, 'PATCH', '/v1/schedules/sch_x', { body: { overlap: 'maybe' }, headers: auth }), 400)
  conforms('GET', '/v1/schedules/{id}/runs', await call(g, 'GET', '/v1/schedules/sch_x/runs?limit=0', { headers: auth }), 400)
  conforms('POST', '/v1/ag-ui', await call(g, 'POST', '/v1/ag-ui', { body: { threadId: 't' }, headers: auth }), 400)
  conforms('POST', '/v1/ai-sdk/chat', await call(g, 'POST', '/v1/ai-sdk/chat', { body: { id: 'c', messages: [] }, headers: auth }), 400)
})

test('the webhook delivery log lists and retries a dead letter as documented; an unknown delivery is 404, a bad status 400', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-conformance-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const token = await mintToken()
  // A loopback target without allow_private_targets: refused at its first attempt, a dead letter at once.
  const { g } = await startProbeGateway(t, {
    ...jwtAuth(),
    store: { kind: 'sqlite', sqlite: { path: join(dir, 'tollgate.db') } },
    notifications: { webhooks: [{ id: 'main', url: 'http://127.0.0.1:9/hook', secret_env: 'HOOK_SECRET', events: ['turn.completed'] }], poll_ms: 20 }
  }, { token, env: { HOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}` } })
  const auth = { authorization: `Bearer ${token}` }
  g.provider.enqueue({ text: 'hi' })
  assert.equal((await call(g, 'POST', '/v1/turns?wait=true', { body: { message: 'hi' }, headers: auth })).status, 200)
  let dead: Json | undefined
  await eventually(async () => {
    const listed = await call(g, 'GET', '/v1/webhooks/deliveries?status=failed', { headers: auth })
    conforms('GET', '/v1/webhooks/deliveries', listed, 200)
    dead = JSON.parse(listed.body).items[0]
    return dead !== undefined
  }, { what: 'the refused delivery' })
  const retry = `/v1/webhooks/deliveries/${dead?.id as string}/retry`
  conforms('POST', '/v1/webhooks/deliveries/{delivery_id}/retry', await call(g, 'POST', retry, { headers: auth }), 200)
  conforms('POST', '/v1/webhooks/deliveries/{delivery_id}/retry', await call(g, 'POST', '/v1/webhooks/deliveries/dlv_missing/retry', { headers: auth }), 404)
  conforms('GET', '/v1/webhooks/deliveries', await call(g, 'GET', '/v1/webhooks/deliveries?status=lost', { headers: auth }), 400)
})

test('a request without a token is 401 on every /v1 route, the WebSocket upgrade included', async (t) => {
  const { g } = await setup(t)
  for (const [method, path, template] of [
    ['POST', '/v1/turns', '/v1/turns'], ['GET', '/v1/turns/t', '/v1/turns/{id}'], ['DELETE', '/v1/turns/t', '/v1/turns/{id}'],
    ['GET', '/v1/turns/t/events', '/v1/turns/{id}/events'], ['POST', '/v1/approvals/a', '/v1/approvals/{request_id}'],
    ['GET', '/v1/sessions/s', '/v1/sessions/{id}'], ['GET', '/v1/tools', '/v1/tools'], ['GET', '/v1/audit', '/v1/audit'],
    ['POST', '/v1/receipts/verify', '/v1/receipts/verify'], ['POST', '/v1/ag-ui', '/v1/ag-ui'], ['POST', '/v1/ai-sdk/chat', '/v1/ai-sdk/chat'],
    ['POST', '/v1/schedules', '/v1/schedules'], ['GET', '/v1/schedules', '/v1/schedules'], ['GET', '/v1/schedules/s', '/v1/schedules/{id}'],
    ['PATCH', '/v1/schedules/s', '/v1/schedules/{id}'], ['DELETE', '/v1/schedules/s', '/v1/schedules/{id}'],
    ['GET', '/v1/schedules/s/runs', '/v1/schedules/{id}/runs'],
    ['GET', '/v1/webhooks/deliveries', '/v1/webhooks/deliveries'],
    ['POST', '/v1/webhooks/deliveries/d/retry', '/v1/webhooks/deliveries/{delivery_id}/retry']
  ] as const) {
    conforms(method, template, await call(g, method, path, method === 'POST' || method === 'PATCH' ? { body: {} } : {}), 401)
  }
  conforms('GET', '/v1/ws', await upgrade(g, {}), 401)
})

test('a missing scope and a foreign WebSocket Origin are 403 as documented', async (t) => {
  const { g } = await setup(t)
  const reader = { authorization: `Bearer ${await mintToken({ scopes: ['turns:read'] })}` }
  conforms('POST', '/v1/turns', await call(g, 'POST', '/v1/turns', { body: { message: 'hi' }, headers: reader }), 403)
  conforms('DELETE', '/v1/turns/{id}', await call(g, 'DELETE', '/v1/turns/t', { headers: reader }), 403)
  const yes = { body: { decision: 'yes' }, headers: reader }
  conforms('POST', '/v1/approvals/{request_id}', await call(g, 'POST', '/v1/approvals/a', yes), 403)
  conforms('POST', '/v1/ag-ui', await call(g, 'POST', '/v1/ag-ui', { body: agUiInput('t'), headers: reader }), 403)
  conforms('POST', '/v1/ai-sdk/chat', await call(g, 'POST', '/v1/ai-sdk/chat', { body: aiSdkChat('c'), headers: reader }), 403)
  conforms('POST', '/v1/schedules', await call(g, 'POST', '/v1/schedules', { body: { cron: '* * * * *', message: 'm' }, headers: reader }), 403)
  conforms('DELETE', '/v1/schedules/{id}', await call(g, 'DELETE', '/v1/schedules/s', { headers: reader }), 403)
  conforms('POST', '/v1/webhooks/deliveries/{delivery_id}/retry', await call(g, 'POST', '/v1/webhooks/deliveries/d/retry', { headers: reader }), 403)
  const writer = { authorization: `Bearer ${await mintToken({ scopes: ['turns:write'] })}` }
  conforms('GET', '/v1/audit', await call(g, 'GET', '/v1/audit', { headers: writer }), 403)
  conforms('GET', '/v1/webhooks/deliveries', await call(g, 'GET', '/v1/webhooks/deliveries', { headers: writer }), 403)
  conforms('GET', '/v1/ws', await upgrade(g, { origin: 'https://evil.example', authorization: `Bearer ${await mintToken()}` }), 403)
})

test('unknown turns, sessions, approvals and paths are 404 as documented', async (t) => {
  const { g, auth } = await setup(t)
  conforms('GET', '/v1/turns/{id}', await call(g, 'GET', '/v1/turns/turn_missing', { headers: auth }), 404)
  conforms('GET', '/v1/turns/{id}/events', await call(g, 'GET', '/v1/turns/turn_missing/events', { headers: auth }), 404)
  conforms('DELETE', '/v1/turns/{id}', await call(g, 'DELETE', '/v1/turns/turn_missing', { headers: auth }), 404)
  conforms('GET', '/v1/sessions/{id}', await call(g, 'GET', '/v1/sessions/missing', { headers: auth }), 404)
  const yes = { body: { decision: 'yes' }, headers: auth }
  conforms('POST', '/v1/approvals/{request_id}', await call(g, 'POST', '/v1/approvals/apr_missing', yes), 404)
  const receipt = { receipt: 'tg-receipt-1-x', turn_id: 'turn_missing', call_id: 'c', tool: 't', arguments: {}, output: '' }
  conforms('POST', '/v1/receipts/verify', await call(g, 'POST', '/v1/receipts/verify', { body: receipt, headers: auth }), 404)
  const resume = { ...agUiInput('no-thread'), resume: [{ interruptId: 'apr_missing', status: 'resolved', payload: { decision: 'yes' } }] }
  conforms('POST', '/v1/ag-ui', await call(g, 'POST', '/v1/ag-ui', { body: resume, headers: auth }), 404)
  const answer = { id: 'a1', role: 'assistant', parts: [{ type: 'dynamic-tool', state: 'approval-responded', approval: { id: 'apr_missing', approved: true } }] }
  const responded = { ...aiSdkChat('no-chat'), messages: [answer] }
  conforms('POST', '/v1/ai-sdk/chat', await call(g, 'POST', '/v1/ai-sdk/chat', { body: responded, headers: auth }), 404)
  for (const [method, path] of [['GET', '/v1/schedules/{id}'], ['DELETE', '/v1/schedules/{id}'], ['GET', '/v1/schedules/{id}/runs']] as const) {
    conforms(method, path, await call(g, method, path.replace('{id}', 'sch_missing'), { headers: auth }), 404)
  }
  conforms('PATCH', '/v1/schedules/{id}', await call(g, 'PATCH', '/v1/schedules/sch_missing', { body: { enabled: true }, headers: auth }), 404)
  conforms('GET', null, await call(g, 'GET', '/v1/no-such-route', { headers: auth }), 404)
  conforms('PUT', null, await call(g, 'PUT', '/healthz'), 404)
})

test('a busy session and an answered approval are 409 as documented', async (t) => {
  const s = await setup(t)
  const hold = gate()
  t.after(() => { hold.open() })
  s.g.provider.enqueue({ text: 'slow', gate: hold.promise })
  assert.equal((await call(s.g, 'POST', '/v1/turns', { body: { message: 'one', session_id: 'busy' }, headers: s.auth })).status, 202)
  const busy = await call(s.g, 'POST', '/v1/turns', { body: { message: 'two', session_id: 'busy' }, headers: s.auth })
  conforms('POST', '/v1/turns', busy, 409)
  assert.equal(JSON.parse(busy.body).code, 'SESSION_BUSY')
  conforms('POST', '/v1/ag-ui', await call(s.g, 'POST', '/v1/ag-ui', { body: agUiInput('busy'), headers: s.auth }), 409)
  conforms('POST', '/v1/ai-sdk/chat', await call(s.g, 'POST', '/v1/ai-sdk/chat', { body: aiSdkChat('busy'), headers: s.auth }), 409)
  hold.open()
  const turn = await finishedTurn(s)
  const again = await call(s.g, 'POST', `/v1/approvals/${turn.requestId}`, { body: { decision: 'no' }, headers: s.auth })
  conforms('POST', '/v1/approvals/{request_id}', again, 409)
  assert.equal(JSON.parse(again.body).code, 'APPROVAL_ALREADY_RESOLVED')
})

test('events no longer retained are 410 REPLAY_GAP as documented', async (t) => {
  const { g, auth } = await setup(t, { turns: { max_events_per_turn: 16 } })
  g.provider.enqueue({ text: 'a long answer that streams in many small pieces, '.repeat(4) })
  const done = await call(g, 'POST', '/v1/turns?wait=true', { body: { message: 'talk' }, headers: auth })
  const gap = await call(g, 'GET', `/v1/turns/${JSON.parse(done.body).turn_id as string}/events?after_seq=0`, { headers: auth })
  conforms('GET', '/v1/turns/{id}/events', gap, 410)
})

test('bodies over the limit are 413 and bodies that are not JSON are 415 on every route that takes a body', async (t) => {
  const { g, auth } = await setup(t, { server: { body_limit_bytes: 1024 } })
  const routes = [
    ['/v1/turns', '/v1/turns'], ['/v1/approvals/a', '/v1/approvals/{request_id}'], ['/v1/receipts/verify', '/v1/receipts/verify'],
    ['/v1/ag-ui', '/v1/ag-ui'], ['/v1/ai-sdk/chat', '/v1/ai-sdk/chat']
  ] as const
  for (const [path, template] of routes) {
    conforms('POST', template, await call(g, 'POST', path, { body: { message: 'x'.repeat(2048) }, headers: auth }), 413)
    conforms('POST', template, await call(g, 'POST', path, { body: '{}', headers: { ...auth, 'content-type': 'text/plain' } }), 415)
  }
})

test('a plain GET to /v1/ws is 426 as documented', async (t) => {
  const { g, auth } = await setup(t)
  conforms('GET', '/v1/ws', await call(g, 'GET', '/v1/ws', { headers: auth }), 426)
})

test('too many running turns is 429 with Retry-After as documented', async (t) => {
  const { g, auth } = await setup(t, { turns: { max_active_turns_per_principal: 1 } })
  const hold = gate()
  t.after(() => { hold.open() })
  g.provider.enqueue({ text: 'slow', gate: hold.promise })
  assert.equal((await call(g, 'POST', '/v1/turns', { body: { message: 'one' }, headers: auth })).status, 202)
  conforms('POST', '/v1/turns', await call(g, 'POST', '/v1/turns', { body: { message: 'two' }, headers: auth }), 429)
})

test('oversized request headers are 431 as documented, on any route', async (t) => {
  const { g } = await setup(t)
  for (const [method, path] of [['GET', '/v1/ws'], ['GET', '/healthz'], ['POST', '/v1/turns']] as const) {
    conforms(method, path, await oversized(g, method, path), 431)
  }
})

test('every operation of openapi.yaml was called for its success, and every error class was provoked', () => {
  for (const [path, methods] of Object.entries(doc.paths as Json)) {
    for (const method of Object.keys(methods as Json)) {
      const statuses = [...checked].filter((c) => c.startsWith(`${method.toUpperCase()} ${path} `)).map((c) => Number(c.split(' ').at(-1)))
      assert.ok(statuses.some((s) => s < 400), `${method.toUpperCase()} ${path} was never called for its success here`)
    }
  }
  const classes = new Set([...checked].map((c) => Number(c.split(' ').at(-1))).filter((s) => s >= 400))
  assert.deepEqual([...classes].sort(), [400, 401, 403, 404, 409, 410, 413, 415, 426, 429, 431])
})
