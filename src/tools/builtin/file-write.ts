/**
 * The `file_write` tool: writes or appends text to a file inside the turn's workspace. A replacing
 * write goes to a temporary file in the same directory and is renamed over the target, so readers
 * never see a half-written file. When the call's tenant has a sandbox user (a root gateway),
 * what it creates is given to that user, so the tenant's sandboxed commands can change it too.
 */
import { randomUUID } from 'node:crypto'
import { constants, promises as fs, type Stats } from 'node:fs'
import path from 'node:path'
import { defineTool, fail, ok, type Tool, type ToolContext, type ToolResult } from '../contract.js'
import { filesystemFailure, resolveInWorkspace, workspaceRelative } from './workspace.js'
import type { FileOwner } from './workspace-layout.js'

export interface FileWriteToolOptions {
  maxWriteBytes: number
}

interface FileWriteArgs {
  path: string
  content: string
  append?: boolean
  create_dirs?: boolean
}

const NOFOLLOW = constants.O_NOFOLLOW ?? 0
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | NOFOLLOW
const TEMP_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW

async function lstatOrNull (p: string): Promise<Stats | null> {
  try {
    return await fs.lstat(p)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
}

async function appendTo (target: string, bytes: Buffer, owner: FileOwner | null): Promise<ToolResult | null> {
  const handle = await fs.open(target, APPEND_FLAGS, 0o666)
  try {
    if (!(await handle.stat()).isFile()) return fail('not a regular file')
    if (owner !== null) await handle.chown(owner.uid, owner.gid)
    await handle.writeFile(bytes)
    return null
  } finally {
    await handle.close()
  }
}

async function replaceAtomically (
  target: string, bytes: Buffer, existing: Stats | null, owner: FileOwner | null, signal: AbortSignal
): Promise<ToolResult | null> {
  // A fixed-length temp name: deriving it from a long target name could exceed NAME_MAX.
  const temp = path.join(path.dirname(target), `.tollgate-${randomUUID()}.tmp`)
  let renamed = false
  try {
    const handle = await fs.open(temp, TEMP_FLAGS, 0o666)
    try {
      await handle.writeFile(bytes)
      if (owner !== null) await handle.chown(owner.uid, owner.gid)
      if (existing !== null) await handle.chmod(existing.mode & 0o777)
      await handle.datasync()
    } finally {
      await handle.close()
    }
    if (signal.aborted) return fail('cancelled')
    await fs.rename(temp, target)
    renamed = true
    return null
  } finally {
    if (!renamed) await fs.rm(temp, { force: true })
  }
}

async function parentExists (dir: string): Promise<boolean> {
  const st = await lstatOrNull(dir)
  return st?.isDirectory() === true
}

/** mkdir -p, giving every folder it creates to `owner`. */
async function makeDirs (dir: string, owner: FileOwner | null): Promise<void> {
  const first = await fs.mkdir(dir, { recursive: true })
  if (owner === null || first === undefined) return
  for (let d = dir; ; d = path.dirname(d)) {
    await fs.chown(d, owner.uid, owner.gid)
    if (d === first || d === path.dirname(d)) break
  }
}

async function writeFile (opts: FileWriteToolOptions, args: FileWriteArgs, ctx: ToolContext): Promise<ToolResult> {
  const { signal } = ctx
  const bytes = Buffer.from(args.content, 'utf8')
  if (bytes.length > opts.maxWriteBytes) {
    return fail(`content is ${bytes.length} bytes, over the ${opts.maxWriteBytes}-byte write limit`)
  }
  const target = await resolveInWorkspace(ctx.workspaceDir, args.path)
  const dir = path.dirname(target)
  if (args.create_dirs === false) {
    if (!(await parentExists(dir))) return fail('parent directory does not exist (set create_dirs to create it)')
  } else {
    await makeDirs(dir, ctx.sandboxIdentity.owner)
  }

  const existing = await lstatOrNull(target)
  if (existing?.isDirectory() === true) return fail('is a directory')
  // The target is canonical, so a symlink here appeared after resolution: refuse rather than follow it.
  if (existing !== null && !existing.isFile()) return fail('not a regular file')
  if (signal.aborted) return fail('cancelled')

  const refused = args.append === true
    ? await appendTo(target, bytes, ctx.sandboxIdentity.owner)
    : await replaceAtomically(target, bytes, existing, ctx.sandboxIdentity.owner, signal)
  if (refused !== null) return refused
  return ok(`Wrote ${bytes.length} bytes to ${await workspaceRelative(ctx.workspaceDir, target)}`)
}

export function createFileWriteTool (opts: FileWriteToolOptions): Tool {
  return defineTool<FileWriteArgs>({
    name: 'file_write',
    description: `Write text to a file in the workspace, replacing it (atomically) or appending to it. At most ${opts.maxWriteBytes} bytes per call.`,
    effects: 'write',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, description: 'Path relative to the workspace.' },
        content: { type: 'string', description: 'The text to write.' },
        append: { type: 'boolean', description: 'Append to the file instead of replacing it.' },
        create_dirs: { type: 'boolean', description: 'Create missing parent directories (default true).' }
      },
      required: ['path', 'content'],
      additionalProperties: false
    },
    async execute (args, ctx) {
      if (ctx.signal.aborted) return fail('cancelled')
      try {
        return await writeFile(opts, args, ctx)
      } catch (err) {
        return filesystemFailure(err)
      }
    }
  })
}
