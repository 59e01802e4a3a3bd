import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { jwtAuth, mintToken } from '../helpers/tokens.js'

const APP = 'https://app.example'

async function preflight (g: TestGateway, origin: string): Promise<Response> {
  return await fetch(`${g.url}/v1/turns`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' }
  })
}

function corsHeaders (res: { headers: Headers }): string[] {
  return [...res.headers.keys()].filter((h) => h.startsWith('access-control-'))
}

test('with CORS on, a preflight of POST /v1/turns from an allowed origin succeeds and another origin gets no CORS headers', async (t) => {
  const token = await mintToken()
  const overrides = { ...jwtAuth(), ws: { allowed_origins: [APP] }, server: { cors: { enabled: true, max_age_s: 120 } } }
  const g = await startGateway({ token, overrides })
  t.after(async () => { await g.close() })

  const allowed = await preflight(g, APP)
  assert.equal(allowed.status, 204)
  assert.equal(allowed.headers.get('access-control-allow-origin'), APP)
  assert.match(allowed.headers.get('access-control-allow-methods') ?? '', /\bPOST\b/)
  assert.match(allowed.headers.get('access-control-allow-headers') ?? '', /\bauthorization\b/)
  assert.equal(allowed.headers.get('access-control-max-age'), '120')
  assert.equal(allowed.headers.get('access-control-allow-credentials'), null)

  const foreign = await preflight(g, 'https://evil.example')
  assert.deepEqual(corsHeaders(foreign), [])
  assert.notEqual(foreign.status, 204)

  // The actual request from the allowed origin may read the correlation and back-off headers.
  const res = await g.http('GET', '/v1/sessions', undefined, { origin: APP })
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('access-control-allow-origin'), APP)
  assert.deepEqual((res.headers.get('access-control-expose-headers') ?? '').split(',').map((h) => h.trim().toLowerCase()).sort(),
    ['retry-after', 'x-request-id', 'x-turn-id'])
  const other = await g.http('GET', '/v1/sessions', undefined, { origin: 'https://evil.example' })
  assert.deepEqual(corsHeaders(other), [])
})

test('CORS is off by default: no preflight answer and no Access-Control headers, even for an origin allowed to open /v1/ws', async (t) => {
  const token = await mintToken()
  const g = await startGateway({ token, overrides: { ...jwtAuth(), ws: { allowed_origins: [APP] } } })
  t.after(async () => { await g.close() })
  const res = await preflight(g, APP)
  assert.deepEqual(corsHeaders(res), [])
  assert.equal(res.status, 404)
  const get = await g.http('GET', '/v1/sessions', undefined, { origin: APP })
  assert.deepEqual(corsHeaders(get), [])
})
