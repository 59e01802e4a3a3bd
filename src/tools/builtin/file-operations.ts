/**
 * What `file_read` and `file_write` do to a workspace, as plain requests run against an open
 * workspace root: in the gateway, or in a file worker acting as the workspace's owner
 * (workspace-files.ts decides). Every name is opened relative to a folder the walk holds
 * (workspace-walk.ts), never by a path the kernel would resolve again.
 */
import { randomUUID } from 'node:crypto'
import { constants, promises as fs, type Stats } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { fail, ok, type ToolResult } from '../result.js'
import { appendNotice } from './text.js'
import { errnoCode, filesystemFailure } from './workspace.js'
import { at, WorkspaceWalk, type Resolved } from './workspace-walk.js'

export interface ReadRequest {
  op: 'read'
  /** The canonical workspace folder, below the root. */
  dir: string
  path: string
  offset?: number
  limit?: number
  maxReadBytes: number
}

export interface WriteRequest {
  op: 'write'
  dir: string
  path: string
  content: string
  append: boolean
  createDirs: boolean
}

export type FileRequest = ReadRequest | WriteRequest

/** The workspace root, held open, and its canonical path. */
export interface OpenRoot {
  fd: number
  path: string
}

// How much of the file's head is searched for a NUL byte to tell binary from text (as git and grep do).
const BINARY_SNIFF_BYTES = 8192

const NOFOLLOW = constants.O_NOFOLLOW
// O_NONBLOCK keeps a FIFO swapped in after the check from blocking the open.
const READ_FLAGS = constants.O_RDONLY | NOFOLLOW | constants.O_NONBLOCK
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | NOFOLLOW
const TEMP_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW

const CHANGED = 'file changed while it was being opened'

async function lstatOrNull (p: string): Promise<Stats | null> {
  try {
    return await fs.lstat(p)
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null
    throw err
  }
}

/** Opens the last component; a link swapped in since it was resolved is refused, not followed. */
async function openResolved (resolved: Resolved, flags: number): Promise<FileHandle | null> {
  try {
    return await fs.open(at(resolved.parent, resolved.name), flags, 0o666)
  } catch (err) {
    if (errnoCode(err) === 'ELOOP') return null
    throw err
  }
}

async function readAt (handle: FileHandle, length: number, position: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length)
  let filled = 0
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled)
    if (bytesRead === 0) break
    filled += bytesRead
  }
  return buffer.subarray(0, filled)
}

function sameFile (a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino
}

async function readSlice (handle: FileHandle, checked: Stats, request: ReadRequest): Promise<ToolResult> {
  const st = await handle.stat()
  if (!st.isFile() || !sameFile(st, checked)) return fail(CHANGED)
  if (st.size === 0) return ok('')

  const head = await readAt(handle, Math.min(BINARY_SNIFF_BYTES, st.size), 0)
  if (head.includes(0)) return fail('binary file')

  const { maxReadBytes } = request
  const offset = request.offset ?? 0
  const available = Math.max(0, st.size - offset)
  const limitedByCaller = request.limit !== undefined && request.limit <= maxReadBytes
  const length = Math.min(request.limit ?? maxReadBytes, maxReadBytes, available)
  const text = (await readAt(handle, length, offset)).toString('utf8')
  if (!limitedByCaller && available > maxReadBytes) {
    return ok(appendNotice(text, `[file truncated: ${st.size} bytes total]`))
  }
  return ok(text)
}

async function readFile (walk: WorkspaceWalk, request: ReadRequest, cancelled: () => boolean): Promise<ToolResult> {
  const resolved = await walk.resolve(request.path, { createDirs: false })
  // Looked at before it is opened: opening a FIFO or a device can block or have side effects.
  const checked = await fs.lstat(at(resolved.parent, resolved.name))
  if (checked.isDirectory()) return fail('is a directory')
  if (checked.isSymbolicLink()) return fail(CHANGED)
  if (!checked.isFile()) return fail('not a regular file')
  if (cancelled()) return fail('cancelled')
  const handle = await openResolved(resolved, READ_FLAGS)
  if (handle === null) return fail(CHANGED)
  try {
    return await readSlice(handle, checked, request)
  } finally {
    await handle.close()
  }
}

async function appendTo (resolved: Resolved, bytes: Buffer): Promise<ToolResult | null> {
  const handle = await openResolved(resolved, APPEND_FLAGS)
  if (handle === null) return fail(CHANGED)
  try {
    if (!(await handle.stat()).isFile()) return fail('not a regular file')
    await handle.writeFile(bytes)
    return null
  } finally {
    await handle.close()
  }
}

/** Writes a temporary file beside the target and renames it over the target, both in the folder the walk holds. */
async function replaceAtomically (
  resolved: Resolved, bytes: Buffer, existing: Stats | null, cancelled: () => boolean
): Promise<ToolResult | null> {
  // A fixed-length temp name: deriving it from a long target name could exceed NAME_MAX.
  const temp = `.tollgate-${randomUUID()}.tmp`
  let renamed = false
  try {
    const handle = await fs.open(at(resolved.parent, temp), TEMP_FLAGS, 0o666)
    try {
      await handle.writeFile(bytes)
      if (existing !== null) await handle.chmod(existing.mode & 0o777)
      await handle.datasync()
    } finally {
      await handle.close()
    }
    if (cancelled()) return fail('cancelled')
    // rename(2) replaces the last component itself: a link swapped in there is replaced, not followed.
    await fs.rename(at(resolved.parent, temp), at(resolved.parent, resolved.name))
    renamed = true
    return null
  } finally {
    if (!renamed) await fs.rm(at(resolved.parent, temp), { force: true })
  }
}

async function writeFile (walk: WorkspaceWalk, request: WriteRequest, cancelled: () => boolean): Promise<ToolResult> {
  let resolved: Resolved
  try {
    resolved = await walk.resolve(request.path, { createDirs: request.createDirs })
  } catch (err) {
    if (!request.createDirs && errnoCode(err) === 'ENOENT') return fail('parent directory does not exist (set create_dirs to create it)')
    throw err
  }
  const existing = await lstatOrNull(at(resolved.parent, resolved.name))
  if (existing?.isDirectory() === true) return fail('is a directory')
  // Resolution followed any link to its end, so a link here appeared since: refuse rather than follow it.
  if (existing !== null && !existing.isFile()) return fail('not a regular file')
  if (cancelled()) return fail('cancelled')

  const bytes = Buffer.from(request.content, 'utf8')
  const refused = request.append
    ? await appendTo(resolved, bytes)
    : await replaceAtomically(resolved, bytes, existing, cancelled)
  return refused ?? ok(`Wrote ${bytes.length} bytes to ${resolved.relative}`)
}

/**
 * Runs one request in its workspace folder below `root`. File-system refusals and bad paths are
 * the tool's failure result; anything else (a bug) is thrown.
 */
export async function runFileRequest (root: OpenRoot, request: FileRequest, cancelled: () => boolean): Promise<ToolResult> {
  let walk: WorkspaceWalk | null = null
  try {
    walk = await WorkspaceWalk.open(root.fd, root.path, request.dir)
    return request.op === 'read' ? await readFile(walk, request, cancelled) : await writeFile(walk, request, cancelled)
  } catch (err) {
    return filesystemFailure(err)
  } finally {
    await walk?.close()
  }
}
