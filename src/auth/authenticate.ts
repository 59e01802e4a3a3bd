/**
 * Authentication seam: turns a request's credentials into a Principal, or refuses with
 * UNAUTHENTICATED. Routes never look at credentials themselves.
 */
import type { Config } from '../config.js'
import { LOCAL_PRINCIPAL, type Principal } from './principal.js'

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

export function createAuthenticator (config: Config): Authenticator {
  if (config.auth.mode !== 'none') throw new Error(`auth.mode ${config.auth.mode} is not supported by this build`)
  return {
    mode: 'none',
    async authenticate () {
      return LOCAL_PRINCIPAL
    },
    async close () {}
  }
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost', '::ffff:127.0.0.1'])

export function isLoopbackHost (host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || host.startsWith('127.')
}
