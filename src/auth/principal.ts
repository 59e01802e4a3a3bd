/**
 * Who is calling. Every turn, session, approval and subscription is owned by a principal
 * (sub + tenant); the key below is the only thing ownership checks compare.
 */
export const SCOPES = ['turns:write', 'turns:read', 'approvals:answer'] as const
export type Scope = typeof SCOPES[number]

export interface Principal {
  sub: string
  tenant: string
  scopes: ReadonlySet<string>
}

export function principalKey (p: Principal): string {
  return `${p.tenant}/${p.sub}`
}

export function hasScope (p: Principal, scope: Scope): boolean {
  return p.scopes.has(scope)
}

/** The single local principal of `auth.mode = "none"` (loopback development only). */
export const LOCAL_PRINCIPAL: Principal = Object.freeze({ sub: 'local', tenant: 'local', scopes: new Set<string>(SCOPES) })
