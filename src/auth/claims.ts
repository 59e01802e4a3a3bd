/**
 * Verified JWT claims → Principal. Runs only after the signature and the registered claims
 * (iss, aud, exp, nbf) passed; it decides who the caller is and what it may do.
 */
import type { JWTPayload } from 'jose'
import { TollgateError } from '../core/errors.js'
import type { Principal } from './principal.js'

const MAX_SUB_CHARS = 256
const MAX_TENANT_CHARS = 128
const MAX_SCOPES = 64
const MAX_SCOPE_CHARS = 128
// eslint-disable-next-line no-control-regex -- control characters are what this pattern finds
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/

export interface ClaimRules {
  /** Name of the claim carrying the tenant (e.g. `tenant`, `org_id`). */
  tenantClaim: string
  /** Seconds a token stays accepted past `exp`; long-lived sockets close at the same moment. */
  clockToleranceS: number
}

function invalid (detail: string): TollgateError {
  return new TollgateError('TOKEN_INVALID', { detail })
}

function identifier (value: unknown, claim: string, maxChars: number): string {
  if (typeof value !== 'string' || value === '') throw invalid(`the "${claim}" claim must be a non-empty string`)
  if (value.length > maxChars) throw invalid(`the "${claim}" claim is longer than ${maxChars} characters`)
  if (CONTROL_CHARS.test(value)) throw invalid(`the "${claim}" claim contains control characters`)
  return value
}

/** `scope` (RFC 8693, space-separated) and `scp` (array or string, as some issuers send) both count. */
function scopesOf (payload: JWTPayload): Set<string> {
  const names: string[] = []
  const add = (value: unknown): void => {
    if (typeof value === 'string') names.push(...value.split(/\s+/).filter((s) => s !== ''))
    else if (Array.isArray(value)) for (const item of value) if (typeof item === 'string' && item !== '') names.push(item)
  }
  add(payload.scope)
  add(payload.scp)
  if (names.length > MAX_SCOPES) throw invalid(`the token carries more than ${MAX_SCOPES} scopes`)
  if (names.some((s) => s.length > MAX_SCOPE_CHARS)) throw invalid(`a scope is longer than ${MAX_SCOPE_CHARS} characters`)
  return new Set(names)
}

export function principalFromClaims (payload: JWTPayload, rules: ClaimRules): Principal {
  const sub = identifier(payload.sub, 'sub', MAX_SUB_CHARS)
  const tenant = identifier(payload[rules.tenantClaim], rules.tenantClaim, MAX_TENANT_CHARS)
  // Ownership compares `tenant/sub`; a slash in the tenant would let tenant "a/b" + sub "c"
  // collide with tenant "a" + sub "b/c".
  if (tenant.includes('/')) throw invalid(`the "${rules.tenantClaim}" claim may not contain "/"`)
  if (typeof payload.exp !== 'number') throw invalid('the "exp" claim is required')
  return {
    sub,
    tenant,
    scopes: scopesOf(payload),
    expiresAt: (payload.exp + rules.clockToleranceS) * 1000
  }
}
