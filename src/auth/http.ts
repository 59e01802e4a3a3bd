/**
 * Fastify glue for authentication: one onRequest hook per protected route that resolves the
 * principal and checks the route's scope. Credentials are read here and nowhere else.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { TollgateError } from '../errors.js'
import type { Authenticator, Credentials } from './authenticate.js'
import { hasScope, type Principal, type Scope } from './principal.js'

export const BEARER_PROTOCOL_PREFIX = 'bearer.'
export const WS_PROTOCOL = 'tollgate.v1'
export const TOKEN_COOKIE = 'tollgate_token'

function cookieValue (header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq !== -1 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim())
  }
  return undefined
}

export function requestCredentials (request: FastifyRequest, allowQueryToken: boolean): Credentials {
  const protocols = String(request.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim())
  const bearer = protocols.find((p) => p.startsWith(BEARER_PROTOCOL_PREFIX))
  const query = request.query as Record<string, unknown> | undefined
  const queryToken = allowQueryToken && typeof query?.access_token === 'string' ? query.access_token : undefined
  return {
    authorization: request.headers.authorization,
    protocolToken: bearer?.slice(BEARER_PROTOCOL_PREFIX.length),
    cookieToken: cookieValue(request.headers.cookie, TOKEN_COOKIE),
    queryToken
  }
}

export function authenticate (auth: Authenticator, scope: Scope | null, options: { allowQueryToken?: boolean } = {}) {
  return async function onRequest (request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const principal = await auth.authenticate(requestCredentials(request, options.allowQueryToken === true))
    if (scope !== null && !hasScope(principal, scope)) {
      throw new TollgateError('FORBIDDEN', `this token lacks the ${scope} scope`)
    }
    request.principal = principal
  }
}

/** The principal the route's onRequest hook resolved; routes without the hook must not call this. */
export function principalOf (request: FastifyRequest): Principal {
  if (request.principal === null) throw new TollgateError('UNAUTHENTICATED', 'authentication required')
  return request.principal
}
