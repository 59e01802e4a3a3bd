/**
 * Fastify glue for authentication: one onRequest hook per protected route that resolves the
 * principal and checks the route's scope. Credentials are read here and nowhere else.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { TollgateError } from '../core/errors.js'
import type { Authenticator, Credentials } from './authenticate.js'
import { requireScope, type Principal, type Scope } from './principal.js'

export const BEARER_PROTOCOL_PREFIX = 'bearer.'
export const WS_PROTOCOL = 'tollgate.v1'
export const TOKEN_COOKIE = 'tollgate_token'

/** Marks the hooks made by authenticate(), so route registration can prove every /v1 route has one. */
const AUTH_HOOK = Symbol('tollgate.authenticate')

export interface AuthHookOptions {
  /**
   * A WebSocket upgrade: browsers cannot set Authorization there, so the `bearer.` subprotocol
   * and the cookie count too. Plain HTTP routes take the header only: a cookie there would ride
   * along on cross-site requests.
   */
  upgrade?: boolean
  /** Also accept `?access_token=` (upgrades only; least preferred, URLs end up in logs). */
  allowQueryToken?: boolean
}

function cookieValue (header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue
    try {
      return decodeURIComponent(part.slice(eq + 1).trim())
    } catch {
      return undefined
    }
  }
  return undefined
}

/** The subprotocols a WebSocket upgrade offers (`Sec-WebSocket-Protocol`), in order. */
export function offeredProtocols (request: FastifyRequest): string[] {
  return String(request.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim()).filter((p) => p !== '')
}

export function requestCredentials (request: FastifyRequest, options: AuthHookOptions = {}): Credentials {
  const credentials: Credentials = { authorization: request.headers.authorization }
  if (options.upgrade !== true) return credentials
  const bearer = offeredProtocols(request).find((p) => p.startsWith(BEARER_PROTOCOL_PREFIX))
  credentials.protocolToken = bearer?.slice(BEARER_PROTOCOL_PREFIX.length)
  credentials.cookieToken = cookieValue(request.headers.cookie, TOKEN_COOKIE)
  if (options.allowQueryToken === true) {
    const query = request.query as Record<string, unknown> | undefined
    if (typeof query?.access_token === 'string') credentials.queryToken = query.access_token
  }
  return credentials
}

/** RFC 6750 challenge, so generic OAuth clients know to refresh or to ask for more scope. */
function challenge (err: TollgateError, scope: Scope | null): string {
  if (err.status === 403 && scope !== null) return `Bearer realm="tollgate", error="insufficient_scope", scope="${scope}"`
  if (err.code === 'UNAUTHENTICATED') return 'Bearer realm="tollgate"'
  return 'Bearer realm="tollgate", error="invalid_token"'
}

/**
 * The onRequest hook of a protected route. `scope: null` admits any valid principal (the
 * WebSocket checks scopes per frame). Refusals are logged as audit records without the token.
 */
export function authenticate (auth: Authenticator, scope: Scope | null, options: AuthHookOptions = {}) {
  const onRequest = async function onRequest (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    try {
      const principal = await auth.authenticate(requestCredentials(request, options))
      if (scope !== null) requireScope(principal, scope)
      request.principal = principal
    } catch (err) {
      if (err instanceof TollgateError && (err.status === 401 || err.status === 403)) {
        void reply.header('www-authenticate', challenge(err, scope))
        request.log.info({ audit: 'auth_refused', code: err.code, route: request.routeOptions.url, scope }, 'refused a request')
      }
      throw err
    }
  }
  return Object.assign(onRequest, { [AUTH_HOOK]: true })
}

function isAuthHook (hook: unknown): boolean {
  return typeof hook === 'function' && (hook as unknown as Record<symbol, unknown>)[AUTH_HOOK] === true
}

/**
 * Fails route registration (and so start-up) for a /v1 route without an authenticate() hook:
 * a route forgotten by a future change is refused loudly instead of served openly.
 */
export function enforceAuthentication (app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (route.url !== '/v1' && !route.url.startsWith('/v1/')) return
    const hooks: unknown[] = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest]
    if (!hooks.some(isAuthHook)) throw new Error(`route ${String(route.method)} ${route.url} has no authenticate() onRequest hook`)
  })
}

/** The principal the route's onRequest hook resolved; routes without the hook must not call this. */
export function principalOf (request: FastifyRequest): Principal {
  if (request.principal === null) throw new TollgateError('UNAUTHENTICATED')
  return request.principal
}
