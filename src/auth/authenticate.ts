/**
 * Authentication seam: turns a request's credentials into a Principal, or refuses with
 * UNAUTHENTICATED / TOKEN_INVALID / TOKEN_EXPIRED. Routes never look at credentials themselves.
 */
import type { Config } from '../core/config.js'
import { createJwtAuthenticator } from './jwt.js'
import { createGeneratedAuthenticator } from './generated.js'
import { LOCAL_PRINCIPAL, type Authenticator } from './principal.js'

export type { Authenticator, Credentials } from './principal.js'

export function createAuthenticator (config: Config, env: NodeJS.ProcessEnv): Authenticator {
  if (config.auth.mode === 'jwt') return createJwtAuthenticator(config.auth, env)
  if (config.auth.mode === 'generated') return createGeneratedAuthenticator(config, env)
  return {
    mode: 'none',
    async authenticate () {
      return LOCAL_PRINCIPAL
    },
    async close () {}
  }
}
