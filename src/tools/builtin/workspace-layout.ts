/**
 * Where each turn's tools work: one folder per tenant under the workspace root (and, optionally,
 * one per session inside it). Tenant and session names are arbitrary strings, so each becomes a
 * directory name that is readable where it can be and unique always: a sanitised prefix plus a hash
 * of the whole name. No name can be `.`/`..`, contain a separator or a control character, start
 * with a dot or a dash, or collide with another name's folder.
 */
import { createHash } from 'node:crypto'
import { chmodSync, closeSync, constants, existsSync, fchmodSync, fchownSync, mkdirSync, openSync, realpathSync, statSync } from 'node:fs'
import path from 'node:path'
import type { FileOwner } from '../contract.js'
import type { SandboxIdentities } from './sandbox-identity.js'
import { errnoCode, WorkspaceError } from './workspace.js'
import { at, O_PATH } from './workspace-walk.js'

export type { FileOwner } from '../contract.js'

export interface WorkspaceLayoutOptions {
  /** The workspace root; created if missing. */
  root: string
  perSession: boolean
  /** Who each tenant's workspaces belong to when not the gateway's user (a root gateway's sandbox users). */
  identities: SandboxIdentities
}

// Enough of the name to recognise it in a listing; the hash carries uniqueness.
const READABLE_CHARS = 40
const HASH_HEX = 16
/** Tenant folders remembered as made (see WorkspaceLayout.known). */
const KNOWN_TENANTS = 4096
/** A workspace: its owner's alone. */
const PRIVATE = 0o700
/** A folder others only pass through: the root, and a tenant's folder of per-session folders. */
const PASSAGE = 0o711

export function workspaceSlug (name: string): string {
  const readable = name.replace(/[^A-Za-z0-9_-]/g, '_').replace(/^[-_]+/, '').slice(0, READABLE_CHARS)
  const hash = createHash('sha256').update(name, 'utf8').digest('hex').slice(0, HASH_HEX)
  return `${readable === '' ? 'x' : readable}-${hash}`
}

/**
 * Makes (or finds) the folder `name` in `parentDir` and gives it to `owner`, by a descriptor of
 * the parent: mkdir does not follow a link planted under that name, the open refuses one
 * (O_NOFOLLOW), and the chown acts on the folder that open found, never on a path again.
 */
function ensureFolder (parentDir: string, name: string, owner: FileOwner | null, mode: number): string {
  const dir = path.join(parentDir, name)
  const parent = openSync(parentDir, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW)
  try {
    let made = true
    try {
      mkdirSync(at(parent, name), { mode })
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST') throw err
      made = false
    }
    let fd: number
    try {
      fd = openSync(at(parent, name), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
    } catch (err) {
      const code = errnoCode(err)
      if (code === 'ENOTDIR' || code === 'ELOOP') throw new WorkspaceError('INVALID_PATH', 'workspace directory is not a directory')
      throw err
    }
    try {
      // mkdir's mode passes through the umask; a workspace's is exact.
      if (made) fchmodSync(fd, mode)
      if (owner !== null) fchownSync(fd, owner.uid, owner.gid)
    } finally {
      closeSync(fd)
    }
  } finally {
    closeSync(parent)
  }
  return dir
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
    // A file worker running as an owner reaches each workspace through the root; it may pass, not list.
    if (this.identities.range !== null) {
      const { mode } = statSync(this.root)
      if ((mode & 0o001) === 0) chmodSync(this.root, (mode & 0o7777) | 0o001)
    }
  }

  /**
   * Folders this layout has created (or found), so a turn in a known tenant's folder costs one
   * existence check instead of a hash, a mkdir and a chown. Bounded: forgotten wholesale when full
   * (the next turn of each tenant makes its folder's checks again).
   */
  private readonly known = new Map<string, string>()

  /**
   * Who `tenant`'s workspaces belong to, and so who its commands and file tools act as in them:
   * null when that is the gateway's own user (sandbox-identity.ts).
   */
  ownerFor (tenant: string): FileOwner | null {
    return this.identities.ownerFor(tenant)
  }

  /** The folder a turn's tools see; created (owned by the tenant's owner, private to it) if missing. */
  dirFor (tenant: string, sessionId: string): string {
    const tenantDir = this.tenantDir(tenant)
    return this.perSession ? ensureFolder(tenantDir, workspaceSlug(sessionId), this.ownerFor(tenant), PRIVATE) : tenantDir
  }

  /**
   * The tenant's folder; created if missing. Without per-session folders it is the tenant's
   * workspace (the owner's, private). With them it only holds the sessions' folders and stays the
   * gateway's: no tenant code ever sees it, and the gateway's own writes (making a session's
   * folder) never land in a folder a sandbox user can change.
   */
  tenantDir (tenant: string): string {
    const dir = this.known.get(tenant)
    // Checked again each time: an operator may have removed the folder meanwhile.
    if (dir !== undefined && existsSync(dir)) return dir
    const owner = this.ownerFor(tenant)
    const made = this.perSession
      ? ensureFolder(this.root, workspaceSlug(tenant), null, owner === null ? PRIVATE : PASSAGE)
      : ensureFolder(this.root, workspaceSlug(tenant), owner, PRIVATE)
    if (this.known.size >= KNOWN_TENANTS) this.known.clear()
    this.known.set(tenant, made)
    return made
  }
}
