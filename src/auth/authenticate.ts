/**
 * Authentication seam: turns a request's credentials into a Principal, or refuses with
 * UNAUTHENTICATED / TOKEN_INVALID / TOKEN_EXPIRED. Routes never look at credentials themselves.
 */
import type { Config } from '../core/config.js'
import { createJwtAuthenticator } from './jwt.js'
import { LOCAL_PRINCIPAL, type Principal } from './principal.js'

export { isLoopbackHost } from './loopback.js'

export interface Credentials {
  authorization?: string | undefined
  /** Bearer token offered through `Sec-WebSocket-Protocol: tollgate.v1, bearer.<JWT>`. */
  protocolToken?: string | undefined
  cookieToken?: string | undefined
  queryToken?: string | undefined
}

export interface Authenticator {
  readonly mode: string
  authenticate (credentials: Credentials): Promise<Principal>
  close (): Promise<void>
}

export function createAuthenticator (config: Config, env: NodeJS.ProcessEnv): Authenticator {
  if (config.auth.mode === 'jwt') return createJwtAuthenticator(config.auth, env)
  return {
    mode: 'none',
    async authenticate () {
      return LOCAL_PRINCIPAL
    },
    async close () {}
  }
}
