/**
 * Cross-site WebSocket defence: a browser always sends Origin on the upgrade, and WebSockets are
 * not covered by CORS, so any page could otherwise drive the gateway with the user's cookie or a
 * loopback gateway without auth. Allowed origins come from configuration and from the address
 * the socket really arrived on, never from the Host header (which a rebinding page controls).
 */
import { isLoopbackHost } from './loopback.js'
import { ConfigError, type Config } from '../config.js'

export interface OriginPolicy {
  /**
   * Whether a socket whose upgrade carries this Origin may open. `localPort` is the port the
   * connection arrived on (the gateway's real port, also when it listens on port 0).
   */
  allows (origin: string | undefined, localPort: number | undefined): boolean
}

function originOf (value: string): URL | null {
  if (!URL.canParse(value)) return null
  const url = new URL(value)
  return url.protocol === 'http:' || url.protocol === 'https:' ? url : null
}

function listedOrigins (config: Config): { any: boolean, origins: Set<string> } {
  const origins = new Set<string>()
  let any = false
  for (const entry of config.ws.allowed_origins) {
    if (entry === '*') {
      any = true
      continue
    }
    const url = originOf(entry)
    if (url === null) throw new ConfigError(`ws.allowed_origins: ${JSON.stringify(entry)} is not an http(s) origin`)
    origins.add(url.origin)
  }
  const publicUrl = config.server.public_url
  if (publicUrl !== undefined) {
    const url = originOf(publicUrl)
    if (url === null) throw new ConfigError(`server.public_url ${JSON.stringify(publicUrl)} is not an http(s) URL`)
    origins.add(url.origin)
  }
  return { any, origins }
}

/**
 * Allowed: `ws.allowed_origins` ("*" for any, jwt mode only), the origin of `server.public_url`,
 * and on a loopback bind the gateway's own loopback origins on the port the socket arrived on.
 * A request without Origin is not from a browser page and passes (its credentials decide).
 */
export function createOriginPolicy (config: Config): OriginPolicy {
  const { any, origins } = listedOrigins(config)
  if (config.auth.mode === 'none') {
    const foreign = [...origins].filter((o) => !isLoopbackHost(new URL(o).hostname))
    if (any || foreign.length > 0) {
      throw new ConfigError(`ws.allowed_origins / server.public_url allow ${any ? '"*"' : foreign.join(', ')}, but with auth.mode "none" ` +
        'a page of that origin would act as the local principal; allow loopback origins only, or use auth.mode "jwt"')
    }
  }
  const loopbackBind = isLoopbackHost(config.server.host)
  return {
    allows: (origin, localPort) => {
      if (origin === undefined) return true
      if (any) return true
      const url = originOf(origin)
      if (url === null) return false
      if (origins.has(url.origin)) return true
      if (!loopbackBind || localPort === undefined || url.protocol !== 'http:' || !isLoopbackHost(url.hostname)) return false
      return Number(url.port === '' ? 80 : url.port) === localPort
    }
  }
}
