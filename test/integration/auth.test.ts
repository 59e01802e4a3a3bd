import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { exportSPKI } from 'jose'
import { deepMerge, loadConfig, type Config } from '../../src/core/config.js'
import { buildServer } from '../../src/app/server.js'
import { authenticate } from '../../src/auth/http.js'
import { startGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/log-capture.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { bearer, jwtAuth, mintToken, TEST_AUDIENCE, TEST_ISSUER, unsignedToken } from '../helpers/tokens.js'

/** Config for a gateway built (not started) by the test itself, with a scratch workspace. */
async function scratchConfig (t: TestContext, overrides: unknown): Promise<Config> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-auth-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  return loadConfig({ env: {}, overrides: deepMerge({ log: { level: 'silent' }, workspace: { dir }, store: { kind: 'memory' } }, overrides) })
}

/** Every route the router knows, read from Fastify's own route tree. */
function routesOf (app: FastifyInstance): Array<{ method: string, url: string }> {
  const routes: Array<{ method: string, url: string }> = []
  const stack: string[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│\s]*)[├└]── (\S+) \(([^)]+)\)/.exec(line)
    if (match === null) continue
    const depth = (match[1] ?? '').length / 4
    stack.length = depth
    stack.push(match[2] ?? '')
    for (const method of (match[3] ?? '').split(', ')) routes.push({ method, url: stack.join('') })
  }
  return routes
}

test('every /v1 route refuses a request without a token with 401 problem JSON and a Bearer challenge', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  const routes = routesOf(g.gateway.app).filter((r) => r.url.startsWith('/v1/'))
  assert.ok(routes.length >= 8, `found only ${routes.length} routes`)
  for (const { method, url } of routes) {
    const path = url.replace(/:[a-z_]+/g, 'some_id')
    const res = await g.http(method, path, method === 'POST' ? { message: 'hi' } : undefined)
    assert.equal(res.status, 401, `${method} ${url}`)
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm="tollgate"/, `${method} ${url}`)
    if (method !== 'HEAD') {
      assert.equal(res.body.code, 'UNAUTHENTICATED', `${method} ${url}`)
      assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8')
    }
  }
})

test('the health routes stay open in jwt mode', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  assert.equal((await g.http('GET', '/healthz')).status, 200)
  assert.equal((await g.http('GET', '/readyz')).status, 200)
})

test('a /v1 route registered without the authenticate hook makes start-up fail', async (t) => {
  const gateway = await buildServer({ config: await scratchConfig(t, jwtAuth()) })
  t.after(() => gateway.close())
  await assert.rejects(async () => {
    await gateway.app.register(async (app) => {
      app.get('/v1/forgotten', async () => ({ open: true }))
    })
    await gateway.app.ready()
  }, /GET \/v1\/forgotten has no authenticate\(\) onRequest hook/)
})

test('a /v1 route registered with the authenticate hook is accepted and protected', async (t) => {
  const gateway = await buildServer({ config: await scratchConfig(t, jwtAuth()) })
  t.after(() => gateway.close())
  await gateway.app.register(async (app) => {
    app.get('/v1/extra', { onRequest: authenticate(gateway.auth, 'turns:read') }, async () => ({ ok: true }))
  })
  await gateway.app.ready()
  assert.equal((await gateway.app.inject({ method: 'GET', url: '/v1/extra' })).statusCode, 401)
  const ok = await gateway.app.inject({ method: 'GET', url: '/v1/extra', headers: bearer(await mintToken()) })
  assert.deepEqual(ok.json(), { ok: true })
})

test('a valid token starts a turn over HTTP and reads it back', async (t) => {
  const token = await mintToken()
  const g = await startGateway({ overrides: jwtAuth(), token })
  t.after(() => g.close())
  g.provider.enqueue({ text: 'hello' })
  const started = await g.http('POST', '/v1/turns?wait=true', { message: 'hi' })
  assert.equal(started.status, 200)
  assert.equal(started.body.final_text, 'hello')
  const read = await g.http('GET', `/v1/turns/${started.body.turn_id as string}`)
  assert.equal(read.status, 200)
  assert.equal(read.body.status, 'completed')
})

test('a gateway verifying against a JWKS accepts its keys and refuses alg none and HS256 forged with the public key', async (t) => {
  const jwks = await startJwksServer()
  t.after(() => jwks.close())
  const key = await jwks.addKey('RS256')
  const g = await startGateway({ overrides: { auth: { mode: 'jwt', jwks_url: jwks.url, issuer: TEST_ISSUER, audience: TEST_AUDIENCE } } })
  t.after(() => g.close())
  const good = await mintToken({ alg: 'RS256', kid: key.kid, key: key.privateKey })
  assert.equal((await g.http('GET', '/v1/tools', undefined, bearer(good))).status, 200)

  const claims = { sub: 'alice', tenant: 'acme', scope: 'turns:read', iss: TEST_ISSUER, aud: TEST_AUDIENCE, exp: Math.floor(Date.now() / 1000) + 600 }
  const forged = await mintToken({ alg: 'HS256', kid: key.kid, key: new TextEncoder().encode(await exportSPKI(key.publicKey)) })
  for (const token of [unsignedToken(claims), forged]) {
    const res = await g.http('GET', '/v1/tools', undefined, bearer(token))
    assert.equal(res.status, 401)
    assert.equal(res.body.code, 'TOKEN_INVALID')
  }
})

test('an expired token is refused with 401 TOKEN_EXPIRED and an invalid_token challenge', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  const res = await g.http('POST', '/v1/turns', { message: 'hi' }, bearer(await mintToken({ expiresIn: -3600 })))
  assert.equal(res.status, 401)
  assert.equal(res.body.code, 'TOKEN_EXPIRED')
  assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/)
})

test('a token for another audience is refused with 401 TOKEN_INVALID', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  const res = await g.http('GET', '/v1/tools', undefined, bearer(await mintToken({ audience: 'billing' })))
  assert.equal(res.status, 401)
  assert.equal(res.body.code, 'TOKEN_INVALID')
})

test('a token without turns:write may read but not start or cancel turns', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  const reader = bearer(await mintToken({ scopes: ['turns:read'] }))
  const start = await g.http('POST', '/v1/turns', { message: 'hi' }, reader)
  assert.equal(start.status, 403)
  assert.equal(start.body.code, 'FORBIDDEN')
  assert.match(start.headers.get('www-authenticate') ?? '', /error="insufficient_scope", scope="turns:write"/)
  assert.equal((await g.http('DELETE', '/v1/turns/turn_x', undefined, reader)).status, 403)
  assert.equal((await g.http('GET', '/v1/tools', undefined, reader)).status, 200)
})

test('a token without approvals:answer cannot answer approvals over REST', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  const res = await g.http('POST', '/v1/approvals/apr_x', { decision: 'yes' }, bearer(await mintToken({ scopes: ['turns:write', 'turns:read'] })))
  assert.equal(res.status, 403)
  assert.equal(res.body.code, 'FORBIDDEN')
})

test('plain HTTP routes ignore the token cookie', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  const res = await g.http('GET', '/v1/tools', undefined, { cookie: `tollgate_token=${await mintToken()}` })
  assert.equal(res.status, 401)
  assert.equal(res.body.code, 'UNAUTHENTICATED')
})

test('a refused request is logged as an audit record that does not contain the token', async (t) => {
  const logs = captureLogs('info')
  const g = await startGateway({ overrides: jwtAuth(), logger: logs.logger })
  t.after(() => g.close())
  const token = await mintToken({ expiresIn: -60 })
  await g.http('GET', '/v1/tools', undefined, bearer(token))
  const audit = logs.lines().find((l) => l.audit === 'auth_refused')
  assert.equal(audit?.code, 'TOKEN_EXPIRED')
  assert.equal(audit?.route, '/v1/tools')
  assert.ok(!logs.text().includes(token.split('.')[2] as string))
})

test('a socket authenticates with the bearer subprotocol and the server echoes only tollgate.v1', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  const ws = await g.socket({ protocols: ['tollgate.v1', `bearer.${await mintToken()}`] })
  assert.equal(ws.ws.protocol, 'tollgate.v1')
  assert.equal((await ws.request({ type: 'hello' })).type, 'welcome')
})

test('a socket authenticates with the tollgate_token cookie', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  const ws = await g.socket({ headers: { cookie: `theme=dark; tollgate_token=${await mintToken()}` } })
  assert.equal((await ws.request({ type: 'ping' })).type, 'pong')
})

test('a socket authenticates with the access_token query parameter when auth.allow_query_token is true', async (t) => {
  const g = await startGateway({ overrides: jwtAuth({ allow_query_token: true }) })
  t.after(() => g.close())
  const ws = await g.socket({ query: `?access_token=${await mintToken()}` })
  assert.equal((await ws.request({ type: 'ping' })).type, 'pong')
})

test('the query token is refused by default', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  await assert.rejects(g.socket({ query: `?access_token=${await mintToken()}` }), (err: any) => err.statusCode === 401 && err.body.code === 'UNAUTHENTICATED')
})

test('a socket without a token or with a bad one is refused before the upgrade', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  await assert.rejects(g.socket(), (err: any) => err.statusCode === 401 && err.body.code === 'UNAUTHENTICATED')
  const forged = await mintToken({ key: new TextEncoder().encode('not-the-gateway-secret-but-long-enough-000') })
  await assert.rejects(g.socket({ protocols: ['tollgate.v1', `bearer.${forged}`] }), (err: any) => err.statusCode === 401 && err.body.code === 'TOKEN_INVALID')
})

test('a page of another site cannot open a socket with the user\'s cookie (cross-site WebSocket hijacking)', async (t) => {
  const logs = captureLogs('info')
  const g = await startGateway({ overrides: { ...jwtAuth(), ws: { allowed_origins: ['https://app.example'] } }, logger: logs.logger })
  t.after(() => g.close())
  const cookie = `tollgate_token=${await mintToken()}`
  await assert.rejects(
    g.socket({ headers: { cookie, origin: 'https://evil.example' } }),
    (err: any) => err.statusCode === 403 && err.body.code === 'ORIGIN_NOT_ALLOWED'
  )
  assert.ok(logs.lines().some((l) => l.audit === 'ws_origin_refused' && l.origin === 'https://evil.example'))
  const allowed = await g.socket({ headers: { cookie, origin: 'https://app.example' } })
  assert.equal((await allowed.request({ type: 'ping' })).type, 'pong')
})

test('a read-only socket may subscribe but not start, cancel or approve', async (t) => {
  const g = await startGateway({ overrides: jwtAuth() })
  t.after(() => g.close())
  g.provider.enqueue({ text: 'done' })
  const writer = await g.socket({ protocols: ['tollgate.v1', `bearer.${await mintToken()}`] })
  const accepted = await writer.request({ type: 'turn.start', message: 'hi' })
  await writer.waitForTerminal(accepted.turn_id)

  const reader = await g.socket({ protocols: ['tollgate.v1', `bearer.${await mintToken({ scopes: ['turns:read'] })}`] })
  for (const frame of [{ type: 'turn.start', message: 'hi' }, { type: 'cancel', turn_id: accepted.turn_id }, { type: 'approval.respond', request_id: 'apr_x', decision: 'yes' }]) {
    const answer = await reader.request(frame)
    assert.equal(answer.type, 'error')
    assert.equal(answer.code, 'FORBIDDEN', frame.type)
  }
  const subscribed = await reader.request({ type: 'subscribe', turn_id: accepted.turn_id })
  assert.equal(subscribed.type, 'subscribed')
  assert.equal(subscribed.status, 'completed')
})

test('a socket is closed with 1008 when its token expires', async (t) => {
  const g = await startGateway({ overrides: jwtAuth({ clock_tolerance_s: 0 }) })
  t.after(() => g.close())
  const ws = await g.socket({ protocols: ['tollgate.v1', `bearer.${await mintToken({ expiresIn: 3 })}`] })
  assert.equal((await ws.request({ type: 'ping' })).type, 'pong')
  assert.equal(await ws.closed(15_000), 1008)
  assert.equal(ws.closeReason, 'token expired')
  assert.ok(ws.frames.some((f) => f.type === 'error' && f.code === 'TOKEN_EXPIRED'))
})

test('auth mode none refuses to start on a non-loopback address', async (t) => {
  const config = await scratchConfig(t, { server: { host: '0.0.0.0' } })
  await assert.rejects(buildServer({ config }), /only allowed on a loopback address/)
})

test('auth mode none on loopback starts with a warning', async (t) => {
  const logs = captureLogs('info')
  const g = await startGateway({ logger: logs.logger })
  t.after(() => g.close())
  assert.ok(logs.lines().some((l) => l.level === 40 && /auth\.mode is "none"/.test(l.msg)))
})

test('jwt mode may bind a non-loopback address', async (t) => {
  const gateway = await buildServer({ config: await scratchConfig(t, { ...jwtAuth(), server: { host: '0.0.0.0' } }) })
  t.after(() => gateway.close())
  assert.equal(gateway.auth.mode, 'jwt')
})
