/**
 * `auth.mode = "jwt"`: bearer tokens verified with jose, either against an HMAC shared secret
 * (development) or against the issuer's JSON Web Key Set (RS*, PS*, ES*, EdDSA). A key source
 * only ever verifies its own family of algorithms, which is what defeats HS/RS key confusion.
 */
import { createRemoteJWKSet, errors, jwtVerify, type JWTVerifyGetKey, type JWTVerifyOptions } from 'jose'
import type { JwtAlgorithm } from '../../schemas/config.js'
import { ConfigError, type Config } from '../core/config.js'
import { TollgateError } from '../core/errors.js'
import type { Authenticator, Credentials } from './principal.js'
import { isLoopbackHost } from '../core/security/loopback.js'
import { principalFromClaims } from './claims.js'

export type AuthSettings = Config['auth']

const MIN_SECRET_BYTES = 32
const DEFAULT_SECRET_ALGORITHMS: JwtAlgorithm[] = ['HS256']
const DEFAULT_KEY_SET_ALGORITHMS: JwtAlgorithm[] = ['RS256', 'ES256', 'EdDSA']
const BEARER = /^Bearer +([^\s]+) *$/i

/** The key set could not be fetched or read: the issuer's side, not the caller's token. */
class KeySetUnavailable extends Error {}

type KeySource = Uint8Array | JWTVerifyGetKey

function isHmac (alg: JwtAlgorithm): boolean {
  return alg.startsWith('HS')
}

function secretOf (auth: AuthSettings, env: NodeJS.ProcessEnv): string | undefined {
  if (auth.secret !== undefined && auth.secret_env !== undefined) throw new ConfigError('auth: give secret or secret_env, not both')
  if (auth.secret_env === undefined) return auth.secret
  const value = env[auth.secret_env]
  if (value === undefined || value === '') throw new ConfigError(`auth.secret_env: environment variable ${auth.secret_env} is not set`)
  return value
}

function keySetUrl (raw: string): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError(`auth.jwks_url ${JSON.stringify(raw)} is not a URL`)
  }
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(host))) {
    throw new ConfigError('auth.jwks_url must use https (plain http only on a loopback address)')
  }
  return url
}

function remoteKeySet (auth: AuthSettings, url: URL): JWTVerifyGetKey {
  const keySet = createRemoteJWKSet(url, {
    timeoutDuration: auth.jwks_timeout_ms,
    cooldownDuration: auth.jwks_cooldown_ms,
    cacheMaxAge: auth.jwks_cache_max_age_ms
  })
  return async (header, token) => {
    try {
      return await keySet(header, token)
    } catch (err) {
      // An unknown or ambiguous kid is the token's problem; everything else is fetching or parsing the set.
      if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) throw err
      if (err instanceof errors.JOSENotSupported) throw err
      throw new KeySetUnavailable('the JSON Web Key Set could not be fetched', { cause: err })
    }
  }
}

interface Verifier {
  key: KeySource
  options: JWTVerifyOptions
}

function buildVerifier (auth: AuthSettings, env: NodeJS.ProcessEnv): Verifier {
  if (auth.issuer === undefined) throw new ConfigError('auth.issuer is required when auth.mode is "jwt"')
  if (auth.audience === undefined) throw new ConfigError('auth.audience is required when auth.mode is "jwt"')
  const secret = secretOf(auth, env)
  if ((secret === undefined) === (auth.jwks_url === undefined)) {
    throw new ConfigError('auth.mode "jwt" needs exactly one key source: secret / secret_env (HMAC) or jwks_url')
  }
  let key: KeySource
  let algorithms: JwtAlgorithm[]
  if (secret !== undefined) {
    if (Buffer.byteLength(secret, 'utf8') < MIN_SECRET_BYTES) throw new ConfigError(`auth: the HMAC secret must be at least ${MIN_SECRET_BYTES} bytes`)
    algorithms = auth.algorithms.length === 0 ? DEFAULT_SECRET_ALGORITHMS : auth.algorithms
    if (!algorithms.every(isHmac)) throw new ConfigError('auth.algorithms: an HMAC secret verifies only HS256/HS384/HS512')
    key = new TextEncoder().encode(secret)
  } else {
    algorithms = auth.algorithms.length === 0 ? DEFAULT_KEY_SET_ALGORITHMS : auth.algorithms
    // An HS* entry would let a token MAC'd with the public key (which anyone has) pass as signed.
    if (algorithms.some(isHmac)) throw new ConfigError('auth.algorithms: a JWKS verifies only asymmetric algorithms, never HS*')
    key = remoteKeySet(auth, keySetUrl(auth.jwks_url as string))
  }
  return {
    key,
    options: {
      algorithms: [...algorithms],
      issuer: auth.issuer,
      audience: auth.audience,
      clockTolerance: auth.clock_tolerance_s,
      requiredClaims: ['exp', 'sub']
    }
  }
}

/** Authorization header first, then the WebSocket subprotocol, the cookie and the query token. */
export function bearerToken (credentials: Credentials): string | undefined {
  if (credentials.authorization !== undefined) {
    const match = BEARER.exec(credentials.authorization)
    if (match === null) throw new TollgateError('UNAUTHENTICATED', 'the Authorization header must be "Bearer <token>"')
    return match[1]
  }
  for (const token of [credentials.protocolToken, credentials.cookieToken, credentials.queryToken]) {
    if (token !== undefined && token !== '') return token
  }
  return undefined
}

function refusal (err: unknown): TollgateError {
  if (err instanceof TollgateError) return err
  if (err instanceof KeySetUnavailable) return new TollgateError('AUTH_UNAVAILABLE', { cause: err })
  if (err instanceof errors.JWTExpired) return new TollgateError('TOKEN_EXPIRED', { cause: err })
  if (err instanceof errors.JOSEError) {
    // jose's messages name the failing check (alg, signature, claim), never the token's content.
    return new TollgateError('TOKEN_INVALID', { detail: err.message, cause: err })
  }
  throw err
}

export function createJwtAuthenticator (auth: AuthSettings, env: NodeJS.ProcessEnv): Authenticator {
  const verifier = buildVerifier(auth, env)
  const rules = { tenantClaim: auth.tenant_claim, clockToleranceS: auth.clock_tolerance_s }
  return {
    mode: 'jwt',
    async authenticate (credentials) {
      const token = bearerToken(credentials)
      if (token === undefined) throw new TollgateError('UNAUTHENTICATED', 'a bearer token is required')
      if (Buffer.byteLength(token, 'utf8') > auth.max_token_bytes) {
        throw new TollgateError('TOKEN_INVALID', { detail: `tokens are limited to ${auth.max_token_bytes} bytes` })
      }
      try {
        const { payload } = await jwtVerify(token, verifier.key, verifier.options)
        return principalFromClaims(payload, rules)
      } catch (err) {
        throw refusal(err)
      }
    },
    async close () {}
  }
}
