/**
 * Token minting for tests: real JWTs signed with jose, so the gateway verifies exactly what an
 * identity provider would send. HS256 with a shared secret unless a key is given.
 */
import { SignJWT, type CryptoKey, type JWTPayload, type KeyObject } from 'jose'

export const TEST_SECRET = 'tollgate-test-secret-0123456789-abcdefghijklmnop'
export const TEST_ISSUER = 'https://idp.test.example'
export const TEST_AUDIENCE = 'tollgate'
export const ALL_SCOPES = ['turns:write', 'turns:read', 'approvals:answer']

/** Config overrides for `auth.mode = "jwt"` with the shared test secret. */
export function jwtAuth (extra: Record<string, unknown> = {}): { auth: Record<string, unknown> } {
  return { auth: { mode: 'jwt', secret: TEST_SECRET, issuer: TEST_ISSUER, audience: TEST_AUDIENCE, ...extra } }
}

export interface MintOptions {
  sub?: string
  tenant?: string
  scopes?: readonly string[]
  /** Extra or overriding claims; `undefined` values remove a claim. */
  claims?: Record<string, unknown>
  /** Seconds from now; negative for an already expired token. */
  expiresIn?: number
  alg?: string
  kid?: string
  key?: CryptoKey | KeyObject | Uint8Array
  issuer?: string
  audience?: string
}

export async function mintToken (options: MintOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  const payload: JWTPayload = {
    sub: options.sub ?? 'alice',
    tenant: options.tenant ?? 'acme',
    scope: (options.scopes ?? ALL_SCOPES).join(' '),
    iss: options.issuer ?? TEST_ISSUER,
    aud: options.audience ?? TEST_AUDIENCE,
    iat: now,
    exp: now + (options.expiresIn ?? 3600),
    ...options.claims
  }
  for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k]
  const header = { alg: options.alg ?? 'HS256', ...(options.kid === undefined ? {} : { kid: options.kid }) }
  return await new SignJWT(payload).setProtectedHeader(header).sign(options.key ?? new TextEncoder().encode(TEST_SECRET))
}

export function bearer (token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` }
}

/** `alg: none` token: what an attacker sends hoping the verifier skips the signature. */
export function unsignedToken (claims: Record<string, unknown>): string {
  const part = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`
}
