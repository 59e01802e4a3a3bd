import { test } from 'node:test'
import assert from 'node:assert/strict'
import { exportSPKI } from 'jose'
import { loadConfig } from '../../src/core/config.js'
import { createAuthenticator, type Authenticator, type Credentials } from '../../src/auth/authenticate.js'
import { TollgateError } from '../../src/core/errors.js'
import { jwtAuth, mintToken, TEST_AUDIENCE, TEST_ISSUER, TEST_SECRET, unsignedToken } from '../helpers/tokens.js'
import { startJwksServer, type JwksServer } from '../helpers/jwks-server.js'

function authenticator (auth: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}): Authenticator {
  const config = loadConfig({ env: {}, overrides: { auth } })
  return createAuthenticator(config, env)
}

const hs = (extra: Record<string, unknown> = {}): Authenticator => authenticator(jwtAuth(extra).auth)

function withHeader (token: string): Credentials {
  return { authorization: `Bearer ${token}` }
}

async function refusal (auth: Authenticator, credentials: Credentials): Promise<TollgateError> {
  try {
    await auth.authenticate(credentials)
  } catch (err) {
    assert.ok(err instanceof TollgateError, `expected a TollgateError, got ${String(err)}`)
    return err
  }
  assert.fail('the credentials were accepted')
}

async function keySetAuth (jwks: JwksServer, extra: Record<string, unknown> = {}): Promise<Authenticator> {
  return authenticator({ mode: 'jwt', jwks_url: jwks.url, issuer: TEST_ISSUER, audience: TEST_AUDIENCE, jwks_timeout_ms: 300, ...extra })
}

test('an HS256 token with the expected issuer and audience yields its principal', async () => {
  const token = await mintToken({ sub: 'alice', tenant: 'acme', scopes: ['turns:read', 'turns:write'], expiresIn: 600 })
  const principal = await hs().authenticate(withHeader(token))
  assert.equal(principal.sub, 'alice')
  assert.equal(principal.tenant, 'acme')
  assert.deepEqual([...principal.scopes].sort(), ['turns:read', 'turns:write'])
  assert.ok(principal.expiresAt !== undefined && principal.expiresAt > Date.now() + 600_000)
})

test('scopes are read from an scp array as well as from the scope string', async () => {
  const token = await mintToken({ scopes: ['turns:read'], claims: { scp: ['approvals:answer'] } })
  const principal = await hs().authenticate(withHeader(token))
  assert.deepEqual([...principal.scopes].sort(), ['approvals:answer', 'turns:read'])
})

test('a token with alg none is refused as TOKEN_INVALID', async () => {
  const now = Math.floor(Date.now() / 1000)
  const token = unsignedToken({ sub: 'alice', tenant: 'acme', scope: 'turns:write', iss: TEST_ISSUER, aud: TEST_AUDIENCE, exp: now + 600 })
  const err = await refusal(hs(), withHeader(token))
  assert.equal(err.code, 'TOKEN_INVALID')
  assert.equal(err.status, 401)
})

test('an expired token is refused as TOKEN_EXPIRED', async () => {
  const err = await refusal(hs(), withHeader(await mintToken({ expiresIn: -3600 })))
  assert.equal(err.code, 'TOKEN_EXPIRED')
  assert.equal(err.status, 401)
})

test('a token expired less than the clock tolerance ago is still accepted', async () => {
  const principal = await hs({ clock_tolerance_s: 120 }).authenticate(withHeader(await mintToken({ expiresIn: -30 })))
  assert.equal(principal.sub, 'alice')
})

test('a token that is not valid yet (nbf in the future) is refused', async () => {
  const token = await mintToken({ claims: { nbf: Math.floor(Date.now() / 1000) + 3600 } })
  const err = await refusal(hs(), withHeader(token))
  assert.equal(err.code, 'TOKEN_INVALID')
  assert.match(err.detail ?? '', /nbf/)
})

test('a token for another audience is refused', async () => {
  const err = await refusal(hs(), withHeader(await mintToken({ audience: 'someone-else' })))
  assert.equal(err.code, 'TOKEN_INVALID')
  assert.match(err.detail ?? '', /aud/)
})

test('a token from another issuer is refused', async () => {
  const err = await refusal(hs(), withHeader(await mintToken({ issuer: 'https://evil.example' })))
  assert.equal(err.code, 'TOKEN_INVALID')
  assert.match(err.detail ?? '', /iss/)
})

test('a token signed with another secret is refused', async () => {
  const token = await mintToken({ key: new TextEncoder().encode('another-secret-that-is-long-enough-0123456789') })
  const err = await refusal(hs(), withHeader(token))
  assert.equal(err.code, 'TOKEN_INVALID')
  assert.match(err.detail ?? '', /signature/)
})

test('a token whose algorithm is outside the allowlist is refused', async () => {
  const err = await refusal(hs(), withHeader(await mintToken({ alg: 'HS512' })))
  assert.equal(err.code, 'TOKEN_INVALID')
  assert.match(err.detail ?? '', /alg/)
})

test('a token without an exp claim is refused', async () => {
  const err = await refusal(hs(), withHeader(await mintToken({ claims: { exp: undefined } })))
  assert.equal(err.code, 'TOKEN_INVALID')
  assert.match(err.detail ?? '', /exp/)
})

test('a token without the tenant claim is refused', async () => {
  const err = await refusal(hs(), withHeader(await mintToken({ claims: { tenant: undefined } })))
  assert.equal(err.code, 'TOKEN_INVALID')
  assert.match(err.detail ?? '', /tenant/)
})

test('a tenant containing a slash is refused so principal keys cannot collide', async () => {
  const err = await refusal(hs(), withHeader(await mintToken({ tenant: 'acme/alice', sub: 'x' })))
  assert.equal(err.code, 'TOKEN_INVALID')
})

test('the tenant is read from the configured claim name', async () => {
  const token = await mintToken({ claims: { tenant: undefined, org_id: 'org-7' } })
  const principal = await hs({ tenant_claim: 'org_id' }).authenticate(withHeader(token))
  assert.equal(principal.tenant, 'org-7')
})

test('a request without any token is refused as UNAUTHENTICATED', async () => {
  const err = await refusal(hs(), {})
  assert.equal(err.code, 'UNAUTHENTICATED')
})

test('an Authorization header with another scheme is refused as UNAUTHENTICATED', async () => {
  const err = await refusal(hs(), { authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}` })
  assert.equal(err.code, 'UNAUTHENTICATED')
})

test('a token larger than max_token_bytes is refused before it is parsed', async () => {
  const token = await mintToken({ claims: { padding: 'x'.repeat(2000) } })
  const err = await refusal(hs({ max_token_bytes: 1024 }), withHeader(token))
  assert.equal(err.code, 'TOKEN_INVALID')
  assert.match(err.detail ?? '', /1024 bytes/)
})

test('the Authorization header takes precedence over the subprotocol, cookie and query tokens', async () => {
  const good = await mintToken({ sub: 'header' })
  const other = await mintToken({ sub: 'cookie' })
  const principal = await hs().authenticate({ authorization: `Bearer ${good}`, protocolToken: other, cookieToken: other, queryToken: other })
  assert.equal(principal.sub, 'header')
})

test('the HMAC secret can come from the environment variable named by secret_env', async () => {
  const auth = authenticator({ mode: 'jwt', secret_env: 'IDP_SECRET', issuer: TEST_ISSUER, audience: TEST_AUDIENCE }, { IDP_SECRET: TEST_SECRET })
  assert.equal((await auth.authenticate(withHeader(await mintToken()))).sub, 'alice')
})

test('jwt mode without an issuer or an audience refuses to start', () => {
  assert.throws(() => authenticator({ mode: 'jwt', secret: TEST_SECRET, audience: TEST_AUDIENCE }), /auth\.issuer is required/)
  assert.throws(() => authenticator({ mode: 'jwt', secret: TEST_SECRET, issuer: TEST_ISSUER }), /auth\.audience is required/)
})

test('jwt mode refuses a key source that is missing, doubled, too short or unset in the environment', () => {
  const base = { mode: 'jwt', issuer: TEST_ISSUER, audience: TEST_AUDIENCE }
  assert.throws(() => authenticator(base), /exactly one key source/)
  assert.throws(() => authenticator({ ...base, secret: TEST_SECRET, jwks_url: 'https://idp.example/jwks' }), /exactly one key source/)
  assert.throws(() => authenticator({ ...base, secret_env: 'MISSING' }), /MISSING is not set/)
  assert.throws(() => authenticator({ ...base, secret_env: 'SHORT' }, { SHORT: 'too-short' }), /at least 32 bytes/)
})

test('algorithm allowlists that would allow key confusion are refused at start', () => {
  const base = { mode: 'jwt', issuer: TEST_ISSUER, audience: TEST_AUDIENCE }
  assert.throws(() => authenticator({ ...base, jwks_url: 'https://idp.example/jwks', algorithms: ['RS256', 'HS256'] }), /never HS/)
  assert.throws(() => authenticator({ ...base, secret: TEST_SECRET, algorithms: ['RS256'] }), /only HS256/)
})

test('a JWKS URL over plain http is refused unless it is on a loopback address', () => {
  const base = { mode: 'jwt', issuer: TEST_ISSUER, audience: TEST_AUDIENCE }
  assert.throws(() => authenticator({ ...base, jwks_url: 'http://idp.example/jwks' }), /must use https/)
  assert.doesNotThrow(() => authenticator({ ...base, jwks_url: 'http://127.0.0.1:9/jwks' }))
})

test('RS256, ES256 and EdDSA tokens signed by keys of the served key set are accepted', async (t) => {
  const jwks = await startJwksServer()
  t.after(() => jwks.close())
  const keys = [await jwks.addKey('RS256'), await jwks.addKey('ES256'), await jwks.addKey('EdDSA')]
  const auth = await keySetAuth(jwks)
  for (const key of keys) {
    const alg = key.alg
    const token = await mintToken({ alg, kid: key.kid, key: key.privateKey, sub: `user-${alg}` })
    assert.equal((await auth.authenticate(withHeader(token))).sub, `user-${alg}`)
  }
})

test('an HS256 token MACed with the RSA public key as the secret is refused (key confusion)', async (t) => {
  const jwks = await startJwksServer()
  t.after(() => jwks.close())
  const key = await jwks.addKey('RS256')
  const pem = await exportSPKI(key.publicKey)
  const forged = await mintToken({ alg: 'HS256', kid: key.kid, key: new TextEncoder().encode(pem) })
  const err = await refusal(await keySetAuth(jwks), withHeader(forged))
  assert.equal(err.code, 'TOKEN_INVALID')
  assert.match(err.detail ?? '', /alg/)
})

test('a token signed by a key that is not in the key set is refused', async (t) => {
  const jwks = await startJwksServer()
  t.after(() => jwks.close())
  await jwks.addKey('RS256', 'published')
  const outsider = await startJwksServer()
  t.after(() => outsider.close())
  const stranger = await outsider.addKey('RS256', 'published')
  const err = await refusal(await keySetAuth(jwks), withHeader(await mintToken({ alg: 'RS256', kid: 'published', key: stranger.privateKey })))
  assert.equal(err.code, 'TOKEN_INVALID')
  assert.match(err.detail ?? '', /signature/)
})

test('a key rotated into the key set is picked up when a token names its unknown kid', async (t) => {
  const jwks = await startJwksServer()
  t.after(() => jwks.close())
  const first = await jwks.addKey('ES256', 'k1')
  const auth = await keySetAuth(jwks, { jwks_cooldown_ms: 0 })
  await auth.authenticate(withHeader(await mintToken({ alg: 'ES256', kid: 'k1', key: first.privateKey })))
  const fetchesBefore = jwks.fetches
  const second = await jwks.addKey('ES256', 'k2')
  const principal = await auth.authenticate(withHeader(await mintToken({ alg: 'ES256', kid: 'k2', key: second.privateKey, sub: 'rotated' })))
  assert.equal(principal.sub, 'rotated')
  assert.equal(jwks.fetches, fetchesBefore + 1)
})

test('a token naming a kid the key set does not have is refused as TOKEN_INVALID', async (t) => {
  const jwks = await startJwksServer()
  t.after(() => jwks.close())
  const key = await jwks.addKey('RS256', 'k1')
  const err = await refusal(await keySetAuth(jwks), withHeader(await mintToken({ alg: 'RS256', kid: 'unknown', key: key.privateKey })))
  assert.equal(err.code, 'TOKEN_INVALID')
})

test('a key set that answers 500 makes authentication unavailable rather than the token invalid', async (t) => {
  const jwks = await startJwksServer()
  t.after(() => jwks.close())
  const key = await jwks.addKey('RS256')
  jwks.mode = 'error'
  const err = await refusal(await keySetAuth(jwks), withHeader(await mintToken({ alg: 'RS256', kid: key.kid, key: key.privateKey })))
  assert.equal(err.code, 'AUTH_UNAVAILABLE')
  assert.equal(err.status, 503)
})

test('a key set that never answers is given up on after jwks_timeout_ms', async (t) => {
  const jwks = await startJwksServer()
  t.after(() => jwks.close())
  const key = await jwks.addKey('RS256')
  jwks.mode = 'hang'
  const err = await refusal(await keySetAuth(jwks, { jwks_timeout_ms: 200 }), withHeader(await mintToken({ alg: 'RS256', kid: key.kid, key: key.privateKey })))
  assert.equal(err.code, 'AUTH_UNAVAILABLE')
})

test('tokens with unknown kids do not refetch the key set during the cooldown', async (t) => {
  const jwks = await startJwksServer()
  t.after(() => jwks.close())
  const key = await jwks.addKey('RS256', 'k1')
  const auth = await keySetAuth(jwks, { jwks_cooldown_ms: 60_000 })
  await auth.authenticate(withHeader(await mintToken({ alg: 'RS256', kid: 'k1', key: key.privateKey })))
  const fetches = jwks.fetches
  for (let i = 0; i < 5; i++) {
    const err = await refusal(auth, withHeader(await mintToken({ alg: 'RS256', kid: `probe-${i}`, key: key.privateKey })))
    assert.equal(err.code, 'TOKEN_INVALID')
  }
  assert.equal(jwks.fetches, fetches)
})
