/**
 * Confines model-supplied paths to the workspace. Every filesystem tool resolves through here, so the
 * checks (lexical escapes, symlinks, dangling symlinks) live in one place.
 */
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { fail, type ToolResult } from '../contract.js'

export type WorkspaceErrorCode = 'PATH_OUTSIDE_WORKSPACE' | 'INVALID_PATH'

export class WorkspaceError extends Error {
  readonly code: WorkspaceErrorCode

  constructor (code: WorkspaceErrorCode, message: string) {
    super(message)
    this.name = 'WorkspaceError'
    this.code = code
  }
}

// Same bound the kernel uses (Linux MAXSYMLINKS), so a link loop fails here rather than spinning.
const MAX_SYMLINK_HOPS = 40

function isInside (root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep)
}

function errnoCode (err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined
}

function isMissing (err: unknown): boolean {
  const code = errnoCode(err)
  return code === 'ENOENT' || code === 'ENOTDIR'
}

async function readLinkIfSymlink (p: string): Promise<string | null> {
  try {
    const st = await fs.lstat(p)
    return st.isSymbolicLink() ? await fs.readlink(p) : null
  } catch (err) {
    if (isMissing(err)) return null
    throw err
  }
}

/**
 * The path the kernel would actually touch: realpath of the deepest existing ancestor plus the
 * not-yet-existing tail. A dangling symlink is followed to where it points, because creating or
 * appending to it would create that target.
 */
async function canonicalize (absolute: string, hops: number): Promise<string> {
  const tail: string[] = []
  let current = absolute
  for (;;) {
    try {
      return path.join(await fs.realpath(current), ...tail)
    } catch (err) {
      if (errnoCode(err) === 'ELOOP') throw new WorkspaceError('INVALID_PATH', 'too many levels of symbolic links')
      if (!isMissing(err)) throw err
    }
    const link = await readLinkIfSymlink(current)
    if (link !== null) {
      if (hops >= MAX_SYMLINK_HOPS) throw new WorkspaceError('INVALID_PATH', 'too many levels of symbolic links')
      const target = path.resolve(await fs.realpath(path.dirname(current)), link)
      return canonicalize(path.join(target, ...tail), hops + 1)
    }
    const parent = path.dirname(current)
    if (parent === current) return path.join(current, ...tail)
    tail.unshift(path.basename(current))
    current = parent
  }
}

async function realRoot (root: string): Promise<string> {
  try {
    return await fs.realpath(root)
  } catch (err) {
    if (isMissing(err)) throw new WorkspaceError('INVALID_PATH', 'workspace directory does not exist')
    throw err
  }
}

/**
 * Resolves `userPath` against the workspace `root` and returns the canonical absolute path (symlinks
 * resolved), or throws a WorkspaceError when the path is malformed or would reach outside the workspace.
 */
export async function resolveInWorkspace (root: string, userPath: string): Promise<string> {
  if (typeof userPath !== 'string' || userPath.trim() === '') {
    throw new WorkspaceError('INVALID_PATH', 'path must be a non-empty string')
  }
  if (userPath.includes('\0')) throw new WorkspaceError('INVALID_PATH', 'path must not contain NUL bytes')

  const lexicalRoot = path.resolve(root)
  const rootReal = await realRoot(lexicalRoot)
  const lexical = path.resolve(lexicalRoot, userPath)
  // An absolute path may name the workspace either as configured or by its real location.
  if (!isInside(lexicalRoot, lexical) && !isInside(rootReal, lexical)) {
    throw new WorkspaceError('PATH_OUTSIDE_WORKSPACE', `path is outside the workspace: ${userPath}`)
  }
  const canonical = await canonicalize(lexical, 0)
  if (!isInside(rootReal, canonical)) {
    throw new WorkspaceError('PATH_OUTSIDE_WORKSPACE', `path resolves outside the workspace: ${userPath}`)
  }
  return canonical
}

/** The workspace-relative form of a path returned by resolveInWorkspace, for messages to the model. */
export async function workspaceRelative (root: string, canonical: string): Promise<string> {
  const relative = path.relative(await realRoot(path.resolve(root)), canonical)
  return relative === '' ? '.' : relative
}

/**
 * Expected filesystem failures become tool failures; anything else is a bug and is rethrown.
 */
export function filesystemFailure (err: unknown): ToolResult {
  if (err instanceof WorkspaceError) return fail(err.message)
  const code = errnoCode(err)
  if (code !== undefined && err instanceof Error) {
    const messages: Record<string, string> = {
      ENOENT: 'no such file or directory',
      EACCES: 'permission denied',
      EPERM: 'operation not permitted',
      EISDIR: 'is a directory',
      ENOTDIR: 'a path component is not a directory',
      ELOOP: 'too many levels of symbolic links',
      ENOSPC: 'no space left on device',
      EROFS: 'read-only file system',
      EEXIST: 'file already exists',
      ENAMETOOLONG: 'file name too long'
    }
    return fail(messages[code] ?? `filesystem error ${code}`)
  }
  throw err
}
