/**
 * DNS-rebinding defence: a request is served only when its Host names this gateway. A page of
 * `evil.example` whose name the attacker re-points at 127.0.0.1 reaches the gateway with
 * `Host: evil.example`, so the name it was sent to, not the address it arrived on, decides.
 * Ports are not compared: a rebinding attack uses the gateway's own port anyway.
 */
import { isIP } from 'node:net'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import { isLoopbackHost, isWildcardHost } from './loopback.js'
import { ConfigError, type Config } from '../config.js'
import { TollgateError } from '../errors.js'

export interface HostPolicy {
  /** Whether a request carrying this Host header addresses a host the gateway serves. */
  allows (hostHeader: string | undefined): boolean
}

const HOST_HEADER = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9_.-]+))(?::\d{1,5})?$/

/** Lower-case host name without port, brackets or trailing dot; IPv6 canonical. */
function canonicalHost (name: string): string | null {
  const bare = name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name
  if (isIP(bare) === 6) return new URL(`http://[${bare}]/`).hostname.slice(1, -1)
  const lower = bare.toLowerCase().replace(/\.$/, '')
  return /^[a-z0-9_.-]+$/.test(lower) ? lower : null
}

/** The host name of a Host header, or null when the header is missing or malformed (userinfo, paths, …). */
export function hostOf (header: string | undefined): string | null {
  if (header === undefined) return null
  const match = HOST_HEADER.exec(header)
  if (match === null) return null
  if (match[1] !== undefined && isIP(match[1]) !== 6) return null
  return canonicalHost(match[1] === undefined ? match[2] as string : `[${match[1]}]`)
}

function publicUrlHost (config: Config): string | null {
  const raw = config.server.public_url
  if (raw === undefined) return null
  if (!URL.canParse(raw)) throw new ConfigError(`server.public_url ${JSON.stringify(raw)} is not a URL`)
  return canonicalHost(new URL(raw).hostname)
}

interface Listed {
  any: boolean
  exact: Set<string>
  /** ".example.com" entries: the name itself and every subdomain. */
  suffixes: string[]
}

function listedHosts (entries: readonly string[]): Listed {
  const listed: Listed = { any: false, exact: new Set(), suffixes: [] }
  for (const entry of entries) {
    if (entry === '*') {
      listed.any = true
      continue
    }
    const suffix = entry.startsWith('.')
    const name = canonicalHost(suffix ? entry.slice(1) : entry)
    if (name === null || name === '') {
      throw new ConfigError(`server.allowed_hosts: ${JSON.stringify(entry)} is not a host name (give names without scheme or port)`)
    }
    if (suffix) listed.suffixes.push(name)
    else listed.exact.add(name)
  }
  return listed
}

/**
 * `auth.mode = "none"` serves loopback names only, whatever else is configured: its one local
 * principal may run tools, so a name that DNS can re-point must never reach it.
 */
function loopbackOnly (config: Config): HostPolicy {
  const foreign = config.server.allowed_hosts.filter((h) => h === '*' || !isLoopbackHost(h.replace(/^\./, '')))
  if (foreign.length > 0) {
    const listed = foreign.map((h) => JSON.stringify(h)).join(', ')
    throw new ConfigError(`server.allowed_hosts lists ${listed}, but auth.mode "none" serves loopback names only; use auth.mode "jwt"`)
  }
  const publicHost = publicUrlHost(config)
  if (publicHost !== null && !isLoopbackHost(publicHost)) {
    throw new ConfigError(`server.public_url names ${publicHost}, but auth.mode "none" serves loopback names only; use auth.mode "jwt"`)
  }
  return remembered((header) => {
    const host = hostOf(header)
    return host !== null && isLoopbackHost(host)
  })
}

// Clients send the same few Host values over and over; the header is the client's, so the memo is bounded.
const REMEMBERED_HOSTS = 64

/** A policy that answers a Host header it has seen from memory (parsing one costs a regex, a URL and a BlockList lookup). */
function remembered (allows: (hostHeader: string | undefined) => boolean): HostPolicy {
  const seen = new Map<string, boolean>()
  return {
    allows: (header) => {
      if (header === undefined) return allows(header)
      let verdict = seen.get(header)
      if (verdict === undefined) {
        verdict = allows(header)
        if (seen.size >= REMEMBERED_HOSTS) seen.clear()
        seen.set(header, verdict)
      }
      return verdict
    }
  }
}

/**
 * Served: `server.host` (unless a wildcard), the host of `server.public_url`, `server.allowed_hosts`;
 * loopback names on a loopback or wildcard bind; on a wildcard bind also any IP address. An IP
 * literal cannot be re-pointed by DNS, and it is what container health checks, Kubernetes probes
 * and Prometheus send (the pod's address changes with every restart), so they need no list.
 */
export function createHostPolicy (config: Config, log: Logger): HostPolicy {
  if (config.auth.mode === 'none') return loopbackOnly(config)
  const bind = canonicalHost(config.server.host) ?? config.server.host
  const wildcard = isWildcardHost(bind)
  const loopback = wildcard || isLoopbackHost(bind)
  const listed = listedHosts(config.server.allowed_hosts)
  if (!wildcard) listed.exact.add(bind)
  const publicHost = publicUrlHost(config)
  if (publicHost !== null) listed.exact.add(publicHost)
  if (wildcard && config.server.allowed_hosts.length === 0 && publicHost === null) {
    log.warn({ host: config.server.host },
      'server.host listens on every interface and neither server.allowed_hosts nor server.public_url is set: requests are served ' +
      'only when their Host is an IP address or a loopback name; list the names clients use in server.allowed_hosts')
  }
  return remembered((header) => {
    const host = hostOf(header)
    if (host === null) return false
    if (listed.any || listed.exact.has(host)) return true
    if (listed.suffixes.some((s) => host === s || host.endsWith(`.${s}`))) return true
    if (loopback && isLoopbackHost(host)) return true
    return wildcard && isIP(host) !== 0
  })
}

const MAX_LOGGED_HOST = 256

/**
 * The app-level onRequest hook: runs before every route, the WebSocket upgrade and the 404 handler.
 * A callback hook, not an async one: it runs on every request and needs no promise.
 */
export function hostCheck (policy: HostPolicy) {
  return function checkHost (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
    const header = request.headers.host
    if (policy.allows(header)) {
      done()
      return
    }
    const host = header?.slice(0, MAX_LOGGED_HOST)
    const url = request.url.split('?')[0]
    request.log.info({ audit: 'host_refused', host, url }, 'refused a request for a host this gateway does not serve')
    const detail = host === undefined
      ? 'the request has no Host header'
      : `Host ${JSON.stringify(host)} is not server.host, the server.public_url host or in server.allowed_hosts`
    done(new TollgateError('HOST_NOT_ALLOWED', { detail }))
  }
}
