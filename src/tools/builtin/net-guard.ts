/**
 * SSRF guard for outbound HTTP: which addresses count as private, which destinations the operator
 * allowed anyway, and a DNS lookup for sockets that refuses private answers. The check runs in the
 * lookup the socket connects with, so a name that resolves differently on a second query (DNS
 * rebinding) cannot slip past a check made earlier.
 */
import dns from 'node:dns'
import net from 'node:net'

export class DestinationNotAllowedError extends Error {
  readonly code = 'DESTINATION_NOT_ALLOWED'
  readonly host: string

  constructor (host: string) {
    super(`destination address is not allowed: ${host} resolves to a private or loopback address`)
    this.name = 'DestinationNotAllowedError'
    this.host = host
  }
}

function buildPrivateRanges (): net.BlockList {
  const list = new net.BlockList()
  const v4: Array<[string, number]> = [
    ['0.0.0.0', 8], // "this network"
    ['10.0.0.0', 8],
    ['100.64.0.0', 10], // carrier-grade NAT
    ['127.0.0.0', 8],
    ['169.254.0.0', 16], // link-local, including cloud metadata endpoints
    ['172.16.0.0', 12],
    ['192.0.0.0', 24], // IETF protocol assignments
    ['192.0.2.0', 24], // documentation
    ['192.168.0.0', 16],
    ['198.18.0.0', 15], // benchmarking
    ['198.51.100.0', 24], // documentation
    ['203.0.113.0', 24], // documentation
    ['224.0.0.0', 4], // multicast
    ['240.0.0.0', 4] // reserved, including 255.255.255.255 broadcast
  ]
  const v6: Array<[string, number]> = [
    ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible block
    ['64:ff9b:1::', 48], // local-use NAT64
    ['100::', 64], // discard-only
    ['2001:db8::', 32], // documentation
    ['fc00::', 7], // unique local
    ['fe80::', 10], // link-local
    ['fec0::', 10], // deprecated site-local
    ['ff00::', 8] // multicast
  ]
  for (const [network, prefix] of v4) list.addSubnet(network, prefix, 'ipv4')
  for (const [network, prefix] of v6) list.addSubnet(network, prefix, 'ipv6')
  return list
}

// Built once and never changed after construction.
const PRIVATE_RANGES = buildPrivateRanges()

/** The eight 16-bit groups of a valid IPv6 address (zone id already removed). */
function ipv6Groups (address: string): number[] {
  let text = address
  const groups: number[] = []
  const lastColon = text.lastIndexOf(':')
  const tail = text.slice(lastColon + 1)
  const embedded: number[] = []
  if (tail.includes('.')) {
    const [a = 0, b = 0, c = 0, d = 0] = tail.split('.').map(Number)
    embedded.push((a << 8) | b, (c << 8) | d)
    text = text.slice(0, lastColon + 1) + '0:0'
  }
  const [head = '', rest] = text.split('::')
  const parse = (part: string): number[] => part === '' ? [] : part.split(':').map((g) => parseInt(g, 16))
  const headGroups = parse(head)
  const restGroups = rest === undefined ? [] : parse(rest)
  const zeros = rest === undefined ? 0 : 8 - headGroups.length - restGroups.length
  groups.push(...headGroups, ...new Array<number>(zeros).fill(0), ...restGroups)
  if (embedded.length === 2) groups.splice(6, 2, ...embedded)
  return groups
}

function ipv4FromGroups (high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
}

function isIPv4Mapped (g: number[]): boolean {
  return g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff
}

/**
 * The IPv4 address an IPv6 address stands for, if it embeds one: IPv4-mapped (::ffff:a.b.c.d),
 * IPv4-translated (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
 */
function embeddedIPv4 (address: string): string | null {
  const g = ipv6Groups(address)
  const [g0, g1 = 0, g2 = 0, g3, g4, g5, g6 = 0, g7 = 0] = g
  const translated = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0xffff && g5 === 0
  const nat64 = g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0
  if (isIPv4Mapped(g) || translated || nat64) return ipv4FromGroups(g6, g7)
  if (g0 === 0x2002) return ipv4FromGroups(g1, g2)
  return null
}

function stripZoneAndBrackets (ip: string): string {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip
  const zone = bare.indexOf('%')
  return zone === -1 ? bare : bare.slice(0, zone)
}

/**
 * True for loopback, private, link-local, CGNAT, multicast, reserved and other non-public addresses,
 * and for anything that is not an IP address at all (fail closed).
 */
export function isPrivateAddress (ip: string): boolean {
  const address = stripZoneAndBrackets(ip.trim())
  const family = net.isIP(address)
  if (family === 4) return PRIVATE_RANGES.check(address, 'ipv4')
  if (family !== 6) return true
  const v4 = embeddedIPv4(address)
  if (v4 !== null) return PRIVATE_RANGES.check(v4, 'ipv4')
  return PRIVATE_RANGES.check(address, 'ipv6')
}

export interface DestinationPolicy {
  /** Hostnames, IP addresses or CIDR ranges that may be reached even though they are private. */
  allowHosts: readonly string[]
  /** Allow every private destination. */
  allowPrivate: boolean
}

export interface DestinationGuard {
  /** Whether a connection to `address`, reached through the name `hostname`, may proceed. */
  permits (hostname: string, address: string): boolean
  /** A `net.connect` lookup that only ever yields permitted addresses. */
  lookup: net.LookupFunction
}

function normaliseHostname (hostname: string): string {
  return stripZoneAndBrackets(hostname).toLowerCase().replace(/\.$/, '')
}

function canonicalAddress (address: string): { address: string, family: 'ipv4' | 'ipv6' } | null {
  const bare = stripZoneAndBrackets(address)
  const family = net.isIP(bare)
  if (family === 4) return { address: bare, family: 'ipv4' }
  if (family !== 6) return null
  // ::ffff:127.0.0.1 is 127.0.0.1 on the wire, so an IPv4 allowlist entry must match it.
  const g = ipv6Groups(bare)
  if (isIPv4Mapped(g)) return { address: ipv4FromGroups(g[6] ?? 0, g[7] ?? 0), family: 'ipv4' }
  return { address: bare, family: 'ipv6' }
}

function buildAllowlist (entries: readonly string[]): { names: Set<string>, addresses: net.BlockList } {
  const names = new Set<string>()
  const addresses = new net.BlockList()
  for (const raw of entries) {
    const entry = raw.trim()
    const slash = entry.indexOf('/')
    if (slash !== -1) {
      const network = canonicalAddress(entry.slice(0, slash))
      const prefix = Number(entry.slice(slash + 1))
      if (network === null || !Number.isInteger(prefix)) throw new Error(`invalid CIDR in http allowHosts: ${raw}`)
      addresses.addSubnet(network.address, prefix, network.family)
      continue
    }
    const address = canonicalAddress(entry)
    if (address !== null) addresses.addAddress(address.address, address.family)
    else names.add(normaliseHostname(entry))
  }
  return { names, addresses }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void

export function createDestinationGuard (policy: DestinationPolicy): DestinationGuard {
  const allow = buildAllowlist(policy.allowHosts)

  const permits = (hostname: string, address: string): boolean => {
    if (policy.allowPrivate || allow.names.has(normaliseHostname(hostname))) return true
    if (!isPrivateAddress(address)) return true
    const canonical = canonicalAddress(address)
    return canonical !== null && allow.addresses.check(canonical.address, canonical.family)
  }

  const lookup = ((hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { family: options.family ?? 0, hints: options.hints ?? 0, all: true }, (err, addresses) => {
      if (err !== null) {
        callback(err, options.all === true ? [] : '')
        return
      }
      // Refuse the name if any answer is private: a mixed answer is how rebinding attacks start.
      if (addresses.length === 0 || addresses.some((a) => !permits(hostname, a.address))) {
        callback(new DestinationNotAllowedError(hostname), options.all === true ? [] : '')
        return
      }
      if (options.all === true) {
        callback(null, addresses)
        return
      }
      const [first] = addresses as [dns.LookupAddress]
      callback(null, first.address, first.family)
    })
  }) as net.LookupFunction

  return { permits, lookup }
}
