/**
 * Who owns what, as keys. A principal is `tenant/sub` (a tenant never contains "/", see
 * auth/claims.ts), so the tenant of any owned record can be read back from its owner. Ids a
 * client chooses — session ids, which AG-UI thread ids and AI SDK chat ids are — are unique only
 * within a tenant: the same id in two tenants names two sessions, so whatever is keyed by a
 * session (stored rows, busy marks, live fan-out) is keyed by tenant and id together.
 */

export function ownerKey (tenant: string, sub: string): string {
  return `${tenant}/${sub}`
}

/** The tenant part of an owner key. */
export function tenantOf (owner: string): string {
  const slash = owner.indexOf('/')
  return slash === -1 ? owner : owner.slice(0, slash)
}

/** One key for a session within the whole gateway (in-process maps, bus channels). */
export function sessionKey (tenant: string, sessionId: string): string {
  return `${tenant}/${sessionId}`
}
