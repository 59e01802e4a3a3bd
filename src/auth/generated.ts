/**
 * `auth.mode = "generated"`: real bearer-token authentication without an identity provider, for
 * trying the gateway where "none" is refused (a container binding 0.0.0.0). At start the gateway
 * draws a random HMAC secret, held in memory only, and signs one token with it (one principal,
 * every scope, `auth.generated_token_ttl_s` long) that the process prints once. A restart makes a
 * new secret, so every earlier token stops working. Verification is the jwt mode's own.
 */
import { createHmac, randomBytes } from 'node:crypto'
import type { Config } from '../core/config.js'
import { createJwtAuthenticator } from './jwt.js'
import type { Authenticator } from './principal.js'

export const GENERATED_ISSUER = 'tollgate-generated'
export const GENERATED_AUDIENCE = 'tollgate'
export const GENERATED_PRINCIPAL = { tenant: 'local', sub: 'operator' }
const SCOPES = 'turns:write turns:read approvals:answer'

function base64url (value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

/** An HS256 JWT; synchronous because start-up needs it before anything is opened. */
function sign (secret: string, claims: Record<string, unknown>): string {
  const unsigned = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url(claims)}`
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`
}

export function createGeneratedAuthenticator (config: Config, env: NodeJS.ProcessEnv, now = Date.now()): Authenticator {
  const secret = randomBytes(32).toString('hex')
  const inner = createJwtAuthenticator({
    ...config.auth,
    mode: 'jwt',
    secret,
    secret_env: undefined,
    jwks_url: undefined,
    algorithms: ['HS256'],
    issuer: GENERATED_ISSUER,
    audience: GENERATED_AUDIENCE,
    tenant_claim: 'tenant'
  }, env)
  const iat = Math.floor(now / 1000)
  const exp = iat + config.auth.generated_token_ttl_s
  const token = sign(secret, {
    iss: GENERATED_ISSUER, aud: GENERATED_AUDIENCE, sub: GENERATED_PRINCIPAL.sub, tenant: GENERATED_PRINCIPAL.tenant,
    scope: SCOPES, iat, exp
  })
  return {
    mode: 'generated',
    startToken: { token, expiresAt: new Date(exp * 1000).toISOString() },
    authenticate: async (credentials) => await inner.authenticate(credentials),
    close: async () => { await inner.close() }
  }
}
