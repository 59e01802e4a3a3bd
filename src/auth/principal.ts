/**
 * Who is calling. Every turn, session, approval and subscription is owned by a principal
 * (sub + tenant); the key below is the only thing ownership checks compare.
 */
import { TollgateError } from '../core/errors.js'
import { ownerKey } from '../core/tenancy.js'

/**
 * `turns:steer` widens whose turns a principal may steer (with `turns:write`): every running turn
 * of its own tenant, not only its own (a supervisor, a teammate). Nothing else crosses principals.
 */
export const SCOPES = ['turns:write', 'turns:read', 'approvals:answer', 'turns:steer'] as const
export type Scope = typeof SCOPES[number]

export interface Principal {
  sub: string
  tenant: string
  scopes: ReadonlySet<string>
  /** Epoch ms after which the credential is no longer accepted; long-lived sockets close then. */
  expiresAt?: number
}

export function principalKey (p: Principal): string {
  return ownerKey(p.tenant, p.sub)
}

export function hasScope (p: Principal, scope: Scope): boolean {
  return p.scopes.has(scope)
}

/** The single local principal of `auth.mode = "none"` (loopback development only). */
export const LOCAL_PRINCIPAL: Principal = Object.freeze({ sub: 'local', tenant: 'local', scopes: new Set<string>(SCOPES) })

export function requireScope (p: Principal, scope: Scope): void {
  if (!hasScope(p, scope)) throw new TollgateError('FORBIDDEN', `this token lacks the ${scope} scope`)
}

export interface Credentials {
  authorization?: string | undefined
  /** Bearer token offered through `Sec-WebSocket-Protocol: tollgate.v1, bearer.<JWT>`. */
  protocolToken?: string | undefined
  cookieToken?: string | undefined
  queryToken?: string | undefined
}

export interface Authenticator {
  readonly mode: string
  /** `auth.mode = "generated"`: the one token signed at start, for the process to print once. */
  readonly startToken?: { token: string, expiresAt: string }
  authenticate (credentials: Credentials): Promise<Principal>
  close (): Promise<void>
}
