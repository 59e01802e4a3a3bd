/**
 * Resolves a model-supplied path inside a workspace without ever letting the kernel follow a
 * symbolic link, so nothing swapped into the path while a call runs can lead it outside.
 *
 * Node has no openat(2). On Linux `/proc/self/fd/<fd>/<name>` is its equivalent: the kernel
 * jumps to the directory the descriptor holds (not to a path that could have been changed) and
 * looks up `name` there, and O_NOFOLLOW / O_DIRECTORY then guard that one component. The walk
 * opens every component this way, one at a time, from a descriptor of the workspace root down.
 * A symbolic link met on the way is read, never followed: when its target stays inside the
 * workspace it is walked the same way, component by component; otherwise the path is refused.
 * A link swapped in after it was checked makes the next open fail (ELOOP / ENOTDIR), never
 * succeed somewhere else. docs/decisions/0180.
 */
import { constants, openSync, promises as fs } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import path from 'node:path'
import { errnoCode, WorkspaceError } from './workspace.js'

/**
 * open(2)'s O_PATH, which Node does not export: a handle that only names a directory. Opening
 * one needs search (x) permission on the way, not read permission on the folder itself, so a
 * folder a tenant made unreadable, or a per-session parent folder, can still be passed through.
 * The value is the generic Linux one, used by every architecture Node supports on Linux.
 */
export const O_PATH = 0o10000000

const DIR_FLAGS = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW

// Same bound the kernel uses (Linux MAXSYMLINKS).
const MAX_HOPS = 40
// Bound on trying one component again because it changed under the walk (made, removed, swapped).
const MAX_RETRIES = 40

/** The name `name` inside the directory open as `dirFd`, for any path-taking call (openat-like). */
export function at (dirFd: number, name: string): string {
  return `/proc/self/fd/${dirFd}/${name}`
}

/**
 * Opens the workspace root; its own path is the operator's, trusted like the configuration. A
 * plain descriptor (closeSync it), not a FileHandle, which garbage collection would close under
 * a holder that keeps only its number.
 */
export function openRoot (root: string): number {
  return openSync(root, O_PATH | constants.O_DIRECTORY)
}

function isInside (root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep)
}

function components (relative: string): string[] {
  return relative.split(path.sep).filter((p) => p !== '' && p !== '.')
}

async function readLinkOrNull (p: string): Promise<string | null> {
  try {
    return await fs.readlink(p)
  } catch (err) {
    // EINVAL: not a link (any more); ENOENT: gone.
    if (errnoCode(err) === 'EINVAL' || errnoCode(err) === 'ENOENT') return null
    throw err
  }
}

/** Where a resolved path ends: the open folder that holds its last component, and that name. */
export interface Resolved {
  /** Descriptor of the folder holding `name`; owned by the walk (closed with it). */
  parent: number
  /** The last component: not a symbolic link when resolved; open it with O_NOFOLLOW. */
  name: string
  /** The path inside the workspace, links resolved, for messages to the model. */
  relative: string
}

export interface WalkOptions {
  /** Make missing folders on the way (mkdir -p), each in the folder the walk holds. */
  createDirs: boolean
}

interface Level {
  handle: FileHandle
  name: string
}

/**
 * Folders held open from the workspace folder down to where the path is being resolved. `..`
 * returns to the folder the walk came from (popping its own stack), never looks a name up.
 */
export class WorkspaceWalk {
  private constructor (
    /** The canonical workspace folder, for absolute paths and link targets. */
    private readonly dir: string,
    private readonly levels: Level[]
  ) {}

  /**
   * Opens the workspace folder `dir`, a folder below the root held as `rootFd`, one component at
   * a time and following no link at all: these folders are the layout's, never a tenant's link.
   */
  static async open (rootFd: number, root: string, dir: string): Promise<WorkspaceWalk> {
    const relative = path.relative(root, dir)
    if (path.isAbsolute(relative) || relative.split(path.sep).includes('..')) {
      throw new Error(`workspace folder ${dir} is not below the workspace root ${root}`)
    }
    const levels: Level[] = []
    try {
      let parent = rootFd
      for (const name of components(relative)) {
        const handle = await fs.open(at(parent, name), DIR_FLAGS).catch((err: unknown) => {
          const code = errnoCode(err)
          if (code === 'ENOENT') throw new WorkspaceError('INVALID_PATH', 'workspace directory does not exist')
          if (code === 'ENOTDIR') throw new WorkspaceError('INVALID_PATH', 'workspace directory is not a directory')
          throw err
        })
        levels.push({ handle, name })
        parent = handle.fd
      }
      if (levels.length === 0) levels.push({ handle: await fs.open(at(rootFd, '.'), DIR_FLAGS), name: '' })
    } catch (err) {
      for (const level of levels) await level.handle.close()
      throw err
    }
    // Only the workspace folder itself stays open; the ones above it were the way there.
    const workspace = levels.pop() as Level
    for (const level of levels) await level.handle.close()
    return new WorkspaceWalk(dir, [workspace])
  }

  /** Closes every folder the walk holds. */
  async close (): Promise<void> {
    for (const level of this.levels.splice(0)) await level.handle.close()
  }

  private get top (): Level {
    return this.levels.at(-1) as Level
  }

  private async pop (): Promise<void> {
    const level = this.levels.pop()
    if (level !== undefined) await level.handle.close()
  }

  /** Back to the workspace folder, for an absolute link target. */
  private async popToWorkspace (): Promise<void> {
    while (this.levels.length > 1) await this.pop()
  }

  private relativeTo (name: string): string {
    const parts = [...this.levels.slice(1).map((l) => l.name), name].filter((p) => p !== '.')
    return parts.length === 0 ? '.' : parts.join(path.sep)
  }

  /**
   * Resolves `userPath` (relative to the workspace, or absolute inside it) to its last component
   * in an open folder. Throws a WorkspaceError when the path is malformed or leads outside, an
   * errno error (ENOENT, ENOTDIR, EACCES …) when the file system says no.
   */
  async resolve (userPath: string, options: WalkOptions): Promise<Resolved> {
    if (typeof userPath !== 'string' || userPath.trim() === '') {
      throw new WorkspaceError('INVALID_PATH', 'path must be a non-empty string')
    }
    if (userPath.includes('\0')) throw new WorkspaceError('INVALID_PATH', 'path must not contain NUL bytes')
    const lexical = path.resolve(this.dir, userPath)
    if (!isInside(this.dir, lexical)) {
      throw new WorkspaceError('PATH_OUTSIDE_WORKSPACE', `path is outside the workspace: ${userPath}`)
    }
    const outside = (): WorkspaceError => new WorkspaceError('PATH_OUTSIDE_WORKSPACE', `path resolves outside the workspace: ${userPath}`)
    const queue = components(path.relative(this.dir, lexical))
    if (queue.length === 0) return { parent: this.top.handle.fd, name: '.', relative: '.' }

    let hops = 0
    const hop = (): void => {
      if (++hops > MAX_HOPS) throw new WorkspaceError('INVALID_PATH', 'too many levels of symbolic links')
    }
    // Counted per component: a deep mkdir -p retries each new folder once.
    let retries = 0
    const retry = (name: string): void => {
      if (++retries > MAX_RETRIES) throw new WorkspaceError('INVALID_PATH', 'path keeps changing while it is resolved')
      queue.unshift(name)
    }
    /** Replaces the link `name` (in the current folder) by its target's components. */
    const expand = async (target: string): Promise<void> => {
      hop()
      if (path.isAbsolute(target)) {
        const normal = path.resolve(target)
        if (!isInside(this.dir, normal)) throw outside()
        await this.popToWorkspace()
        queue.unshift(...components(path.relative(this.dir, normal)))
      } else {
        queue.unshift(...target.split('/'))
      }
    }

    for (;;) {
      const name = queue.shift()
      if (name === undefined) {
        // The path ended in `..` or `.` (after a link): it names a folder the walk holds.
        const level = this.levels.length > 1 ? this.levels.pop() as Level : null
        if (level === null) return { parent: this.top.handle.fd, name: '.', relative: '.' }
        await level.handle.close()
        return { parent: this.top.handle.fd, name: level.name, relative: this.relativeTo(level.name) }
      }
      if (name === '' || name === '.') continue
      if (name === '..') {
        if (this.levels.length === 1) throw outside()
        await this.pop()
        continue
      }
      const here = at(this.top.handle.fd, name)
      if (queue.length === 0) {
        const link = await readLinkOrNull(here)
        if (link === null) return { parent: this.top.handle.fd, name, relative: this.relativeTo(name) }
        await expand(link)
        continue
      }
      try {
        this.levels.push({ handle: await fs.open(here, DIR_FLAGS), name })
        retries = 0
        continue
      } catch (err) {
        const code = errnoCode(err)
        if (code === 'ENOENT' && options.createDirs) {
          await fs.mkdir(here).catch((e: unknown) => { if (errnoCode(e) !== 'EEXIST') throw e })
          retry(name)
          continue
        }
        if (code !== 'ENOTDIR' && code !== 'ELOOP') throw err
      }
      // Not a folder: a link (read it, never follow it), or a file where a folder should be.
      const link = await readLinkOrNull(here)
      if (link !== null) {
        await expand(link)
        continue
      }
      const st = await fs.lstat(here).catch((err: unknown) => { if (errnoCode(err) === 'ENOENT') return null; throw err })
      if (st !== null && !st.isDirectory()) throw Object.assign(new Error(`ENOTDIR: ${name}`), { code: 'ENOTDIR' })
      // It changed between the open and the look (a folder now, or gone): try the same name again.
      retry(name)
    }
  }
}
