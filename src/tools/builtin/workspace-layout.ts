/**
 * Where each turn's tools work: one folder per tenant under the workspace root (and, optionally,
 * one per session inside it). Tenant and session names are arbitrary strings, so each becomes a
 * directory name that is readable where it can be and unique always: a sanitised prefix plus a hash
 * of the whole name. No name can be `.`/`..`, contain a separator or a control character, start
 * with a dot or a dash, or collide with another name's folder.
 */
import { createHash } from 'node:crypto'
import { chownSync, existsSync, mkdirSync, realpathSync } from 'node:fs'
import path from 'node:path'
import type { FileOwner, SandboxIdentities, SandboxIdentity } from './sandbox-identity.js'

export type { FileOwner }

export interface WorkspaceLayoutOptions {
  /** The workspace root; created if missing. */
  root: string
  perSession: boolean
  /** Who each tenant's folders belong to (its sandbox uid/gid when the gateway is root). */
  identities: SandboxIdentities
}

// Enough of the name to recognise it in a listing; the hash carries uniqueness.
const READABLE_CHARS = 40
const HASH_HEX = 16
/** Tenant folders remembered as made (see WorkspaceLayout.known). */
const KNOWN_TENANTS = 4096

export function workspaceSlug (name: string): string {
  const readable = name.replace(/[^A-Za-z0-9_-]/g, '_').replace(/^[-_]+/, '').slice(0, READABLE_CHARS)
  const hash = createHash('sha256').update(name, 'utf8').digest('hex').slice(0, HASH_HEX)
  return `${readable === '' ? 'x' : readable}-${hash}`
}

export class WorkspaceLayout {
  /** Canonical (symlink-free) root, so a sandbox mounts each folder at the path tools report. */
  readonly root: string
  readonly perSession: boolean
  private readonly identities: SandboxIdentities

  constructor (options: WorkspaceLayoutOptions) {
    if (!path.isAbsolute(options.root)) throw new Error(`the workspace root must be an absolute path, got ${JSON.stringify(options.root)}`)
    mkdirSync(options.root, { recursive: true })
    this.root = realpathSync(options.root)
    this.perSession = options.perSession
    this.identities = options.identities
  }

  /**
   * Folders this layout has created (or found), so a turn in a known tenant's folder costs one
   * existence check instead of a hash, a mkdir and a chown. Bounded: forgotten wholesale when full
   * (the next turn of each tenant makes its folder's checks again).
   */
  private readonly known = new Map<string, string>()

  /** The folder a turn's tools see; created (owned by the tenant's sandbox user, private to it) if missing. */
  dirFor (tenant: string, sessionId: string): string {
    const tenantDir = this.tenantDir(tenant)
    return this.perSession ? this.ensure(path.join(tenantDir, workspaceSlug(sessionId)), tenant) : tenantDir
  }

  /** Who the tenant's tool processes run as and its folders belong to, and its cgroup's name. */
  identityFor (tenant: string): SandboxIdentity {
    return { key: workspaceSlug(tenant), owner: this.identities.ownerFor(tenant) }
  }

  /** The tenant's folder (its sessions' folders inside it when `perSession`); created if missing. */
  tenantDir (tenant: string): string {
    const dir = this.known.get(tenant)
    // Checked again each time: an operator may have removed the folder meanwhile.
    if (dir !== undefined && existsSync(dir)) return dir
    const made = this.ensure(path.join(this.root, workspaceSlug(tenant)), tenant)
    if (this.known.size >= KNOWN_TENANTS) this.known.clear()
    this.known.set(tenant, made)
    return made
  }

  private ensure (dir: string, tenant: string): string {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const owner = this.identities.ownerFor(tenant)
    if (owner !== null) chownSync(dir, owner.uid, owner.gid)
    return dir
  }
}
