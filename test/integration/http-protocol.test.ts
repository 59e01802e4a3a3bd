/**
 * HTTP behaviour shared by every route: the x-request-id every response carries (and the log's
 * reqId), Retry-After on 429, oversized request headers, plain requests to the WebSocket route and
 * bodies that are not JSON. Real requests to a real gateway.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { WebSocket } from 'ws'
import { startGateway, type StartOptions, type TestGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/log-capture.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'
import { gate } from '../helpers/turns.js'

const GENERATED = /^req_[0-9a-f-]{36}$/

async function setup (t: { after: (fn: () => Promise<void>) => void }, options: StartOptions = {}): Promise<TestGateway> {
  const g = await startGateway(options)
  t.after(() => g.close())
  return g
}

/** Opens a WebSocket and resolves with the HTTP status and headers of the upgrade's answer. */
async function upgradeAnswer (url: string, headers: Record<string, string>): Promise<{ status: number, headers: Record<string, unknown> }> {
  return await new Promise((resolve, reject) => {
    const ws = new WebSocket(url, ['tollgate.v1'], { headers })
    ws.on('upgrade', (res) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers })
      ws.close()
    })
    ws.on('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers })
      res.destroy()
    })
    ws.on('error', reject)
  })
}

test('a well-formed x-request-id is echoed on successes, problem responses, 404s and refused and accepted upgrades', async (t) => {
  const g = await setup(t, { overrides: jwtAuth() })
  const token = await mintToken()
  const id = { 'x-request-id': 'trace-01HZX.42:a_b' }
  const answers = [
    await g.http('GET', '/healthz', undefined, id),
    await g.http('GET', '/v1/tools', undefined, { ...id, ...bearer(token) }),
    await g.http('GET', '/v1/turns/turn_missing', undefined, { ...id, ...bearer(token) }),
    await g.http('GET', '/v1/turns/turn_missing', undefined, id),
    await g.http('GET', '/no/such/route', undefined, id),
    await g.http('POST', '/v1/turns', 'nope', { ...id, ...bearer(token), 'content-type': 'text/plain' })
  ]
  assert.deepEqual(answers.map((a) => [a.status, a.headers.get('x-request-id')]), [
    [200, id['x-request-id']], [200, id['x-request-id']], [404, id['x-request-id']], [401, id['x-request-id']],
    [404, id['x-request-id']], [415, id['x-request-id']]
  ])
  const refused = await upgradeAnswer(g.wsUrl, { ...id, origin: 'https://evil.example', authorization: `Bearer ${token}` })
  assert.deepEqual([refused.status, refused.headers['x-request-id']], [403, id['x-request-id']])
  const accepted = await upgradeAnswer(g.wsUrl, { ...id, authorization: `Bearer ${token}` })
  assert.deepEqual([accepted.status, accepted.headers['x-request-id']], [101, id['x-request-id']])
})

test('a missing, malformed or oversized x-request-id is replaced by a generated one', async (t) => {
  const g = await setup(t)
  const ids = new Set<string>()
  for (const sent of [undefined, '', 'has space', 'new\u00e9line', 'a'.repeat(129), 'semi;colon']) {
    const res = await g.http('GET', '/healthz', undefined, sent === undefined ? {} : { 'x-request-id': sent })
    const echoed = res.headers.get('x-request-id') ?? ''
    assert.match(echoed, GENERATED, `sent ${JSON.stringify(sent)}`)
    ids.add(echoed)
  }
  assert.equal(ids.size, 6, 'every request gets its own id')
  const longest = await g.http('GET', '/healthz', undefined, { 'x-request-id': 'a'.repeat(128) })
  assert.equal(longest.headers.get('x-request-id'), 'a'.repeat(128))
})

test('the x-request-id of a request is the reqId of its log lines', async (t) => {
  const logs = captureLogs('info')
  const g = await setup(t, { logger: logs.logger, overrides: { log: { level: 'info' } } })
  await g.http('GET', '/readyz', undefined, { 'x-request-id': 'follow-me-1' })
  const generated = (await g.http('GET', '/readyz')).headers.get('x-request-id')
  const lines = logs.lines().filter((l) => l.msg === 'request completed')
  assert.deepEqual(lines.map((l) => l.reqId), ['follow-me-1', generated])
})

test('an SSE turn stream carries its x-request-id next to x-turn-id', async (t) => {
  const g = await setup(t)
  g.provider.enqueue({ text: 'streamed' })
  const res = await fetch(`${g.url}/v1/turns`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-request-id': 'sse-1' },
    body: JSON.stringify({ message: 'hi' })
  })
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('x-request-id'), 'sse-1')
  assert.match(res.headers.get('x-turn-id') ?? '', /^turn_/)
  assert.match(await res.text(), /event: turn\.completed/)
})

test('a 429 TOO_MANY_TURNS tells the client when to retry with Retry-After', async (t) => {
  const g = await setup(t, { overrides: { turns: { max_active_turns_per_principal: 1 } } })
  const hold = gate()
  g.provider.enqueue({ text: 'slow', gate: hold.promise })
  t.after(() => { hold.open() })
  assert.equal((await g.http('POST', '/v1/turns', { message: 'one' })).status, 202)
  const refused = await g.http('POST', '/v1/turns', { message: 'two' })
  assert.deepEqual([refused.status, refused.body.code, refused.headers.get('retry-after')], [429, 'TOO_MANY_TURNS', '5'])
})

test('request headers over Node\'s 16 KiB limit get 431 HEADERS_TOO_LARGE problem JSON; the next request is served', async (t) => {
  const g = await setup(t)
  const { port } = new URL(g.url)
  const answer = await new Promise<{ status: number, headers: Record<string, unknown>, body: string }>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/healthz', headers: { 'x-filler': 'f'.repeat(20_000) } }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, body }) })
    })
    req.on('error', reject)
    req.end()
  })
  assert.equal(answer.status, 431)
  assert.equal(answer.headers['content-type'], 'application/problem+json; charset=utf-8')
  assert.match(String(answer.headers['x-request-id']), GENERATED)
  const problem = JSON.parse(answer.body) as Record<string, unknown>
  assert.deepEqual({ status: problem.status, code: problem.code }, { status: 431, code: 'HEADERS_TOO_LARGE' })
  assert.match(String(problem.title), /exceed 16384 bytes/)
  assert.equal((await g.http('GET', '/healthz')).status, 200)
})

test('a malformed URL and a path parameter longer than any id are 400 INVALID_REQUEST problem JSON with an x-request-id', async (t) => {
  const g = await setup(t)
  for (const path of ['/v1/turns/%E0%A4%A', `/v1/turns/${'x'.repeat(500)}`]) {
    const res = await g.http('GET', path, undefined, { 'x-request-id': 'bad-url-1' })
    assert.deepEqual([res.status, res.body.code, res.headers.get('x-request-id')], [400, 'INVALID_REQUEST', 'bad-url-1'], path)
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/)
  }
})

test('a session whose client-chosen id has the full 128 characters can be read back', async (t) => {
  const g = await setup(t)
  const sessionId = 's'.repeat(128)
  g.provider.enqueue({ text: 'hello' })
  assert.equal((await g.http('POST', '/v1/turns?wait=true', { message: 'hi', session_id: sessionId })).status, 200)
  const res = await g.http('GET', `/v1/sessions/${sessionId}`)
  assert.deepEqual([res.status, res.body.session_id], [200, sessionId])
})

test('a plain GET to the WebSocket route is 426 UPGRADE_REQUIRED with Upgrade: websocket', async (t) => {
  const g = await setup(t)
  const res = await g.http('GET', '/v1/ws')
  assert.equal(res.status, 426)
  assert.equal(res.headers.get('upgrade'), 'websocket')
  assert.equal(res.body.code, 'UPGRADE_REQUIRED')
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/)
})

test('a text/plain body is refused with 415 UNSUPPORTED_MEDIA_TYPE like any body that is not JSON', async (t) => {
  const g = await setup(t)
  const res = await g.http('POST', '/v1/turns', '{"message":"hi"}', { 'content-type': 'text/plain' })
  assert.deepEqual([res.status, res.body.code], [415, 'UNSUPPORTED_MEDIA_TYPE'])
  assert.equal(g.provider.requests.length, 0)
})
