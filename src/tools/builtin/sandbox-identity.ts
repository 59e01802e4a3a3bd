/**
 * Who a tenant's tool calls act as on this machine: the one place that maps a tenant to the uid
 * and gid its sandboxed commands run as, its file tools' worker runs as and its workspace belongs
 * to (WorkspaceLayout.ownerFor hands it out; tools get it as `ToolContext.workspaceOwner`). A root
 * gateway spreads tenants over a configured range of ids, each tenant at a stable offset derived
 * from its name, so one tenant's processes are never counted against another's process limit and
 * never share a uid with them (a hash collision aside). A gateway that is not root has no ids to
 * hand out: every command keeps the gateway's own user.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { FileOwner } from '../contract.js'

/** `count` consecutive uids from `firstUid`, and as many gids from `firstGid`. */
export interface SandboxIdRange {
  firstUid: number
  firstGid: number
  count: number
}

/** Tenants whose ids are kept at hand; past it the map starts again (a hash each is cheap, not free). */
const KNOWN_TENANTS = 4096

export class SandboxIdentities {
  /** Null: the gateway is not root (or runs commands unconfined); nobody changes user. */
  readonly range: SandboxIdRange | null
  /** Every turn asks at its start; a SHA-256 per ask was a third of resolving the turn's execution. */
  private readonly known = new Map<string, FileOwner>()

  constructor (range: SandboxIdRange | null) {
    this.range = range
  }

  /** The uid/gid the tenant's commands run as; null when nobody changes user. */
  ownerFor (tenant: string): FileOwner | null {
    if (this.range === null) return null
    const known = this.known.get(tenant)
    if (known !== undefined) return known
    const offset = offsetOf(tenant, this.range.count)
    const owner = Object.freeze({ uid: this.range.firstUid + offset, gid: this.range.firstGid + offset })
    if (this.known.size >= KNOWN_TENANTS) this.known.clear()
    this.known.set(tenant, owner)
    return owner
  }

  /** What the start-up probe runs as: the first ids of the range. */
  probeOwner (): FileOwner | null {
    return this.ownerAt(0)
  }

  private ownerAt (offset: number): FileOwner | null {
    if (this.range === null) return null
    return { uid: this.range.firstUid + offset, gid: this.range.firstGid + offset }
  }
}

/** A stable offset below `count`: the same tenant gets the same ids on every start and instance. */
function offsetOf (tenant: string, count: number): number {
  const digest = createHash('sha256').update('tollgate-sandbox-id\0').update(tenant, 'utf8').digest()
  // 48 bits of the hash keep the modulo bias far below anything a count up to 2^32 notices.
  return digest.readUIntBE(0, 6) % count
}

interface IdMapLine {
  inside: number
  count: number
}

function readIdMap (file: string): IdMapLine[] | null {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return null
  }
  return text.split('\n').filter((l) => l.trim() !== '').map((l) => {
    const [inside, , count] = l.trim().split(/\s+/).map(Number)
    return { inside: inside ?? 0, count: count ?? 0 }
  })
}

function covered (map: readonly IdMapLine[], first: number, count: number): boolean {
  let next = first
  const end = first + count
  // Extents never overlap; walk them in order from the range's start.
  for (const line of [...map].sort((a, b) => a.inside - b.inside)) {
    if (line.inside <= next && next < line.inside + line.count) next = line.inside + line.count
    if (next >= end) return true
  }
  return next >= end
}

/**
 * Null when every id of the range exists in this process's user namespace, else why not: a root
 * gateway in a user-namespaced container has only the ids its namespace maps (often 65536), and
 * an id outside them fails every chown and setuid.
 */
export function unmappedIds (range: SandboxIdRange, uidMap = '/proc/self/uid_map', gidMap = '/proc/self/gid_map'): string | null {
  const last = range.count - 1
  for (const [kind, file, first] of [['uids', uidMap, range.firstUid], ['gids', gidMap, range.firstGid]] as const) {
    const map = readIdMap(file)
    // No map to read (not Linux): nothing to check against.
    if (map === null) continue
    if (!covered(map, first, range.count)) return `${kind} ${first}–${first + last} are not all mapped in this user namespace (${file})`
  }
  return null
}
