/**
 * Loopback and wildcard addresses: where `auth.mode = "none"` may bind, which Host names a
 * loopback gateway serves, and which binds listen on every interface.
 */
import { BlockList, isIP } from 'node:net'

const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4')
LOOPBACK.addAddress('::1', 'ipv6')

function unbracket (host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
}

/**
 * `localhost`, 127.0.0.0/8 and ::1 (also IPv4-mapped, bracketed or not). Names that merely start
 * with "127." are not addresses: `127.evil.example` resolves wherever its owner wants.
 */
export function isLoopbackHost (host: string): boolean {
  const h = unbracket(host).toLowerCase()
  if (h === 'localhost') return true
  const family = isIP(h)
  if (family === 4) return LOOPBACK.check(h, 'ipv4')
  if (family === 6) return LOOPBACK.check(h, 'ipv6')
  return false
}

/** A bind on every interface (0.0.0.0, ::): reachable under any address of the machine. */
export function isWildcardHost (host: string): boolean {
  const h = unbracket(host)
  if (h === '0.0.0.0') return true
  return isIP(h) === 6 && new URL(`http://[${h}]/`).hostname === '[::]'
}
