/**
 * The `file_read` tool: reads a bounded slice of a regular text file inside the turn's workspace.
 */
import { constants, promises as fs, type Stats } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { defineTool, fail, ok, type Tool, type ToolContext, type ToolResult } from '../contract.js'
import { filesystemFailure, resolveInWorkspace } from './workspace.js'
import { appendNotice } from './text.js'

export interface FileReadToolOptions {
  maxReadBytes: number
}

interface FileReadArgs {
  path: string
  offset?: number
  limit?: number
}

// How much of the file's head is searched for a NUL byte to tell binary from text (as git and grep do).
const BINARY_SNIFF_BYTES = 8192

// O_NONBLOCK keeps a FIFO swapped in after the stat check from blocking the open; O_NOFOLLOW
// refuses a symlink swapped in for the final component.
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0)

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

async function readSlice (handle: FileHandle, checked: Stats, args: FileReadArgs, maxReadBytes: number): Promise<ToolResult> {
  const st = await handle.stat()
  if (!st.isFile() || !sameFile(st, checked)) return fail('file changed while it was being opened')
  if (st.size === 0) return ok('')

  const head = await readAt(handle, Math.min(BINARY_SNIFF_BYTES, st.size), 0)
  if (head.includes(0)) return fail('binary file')

  const offset = args.offset ?? 0
  const available = Math.max(0, st.size - offset)
  const limitedByCaller = args.limit !== undefined && args.limit <= maxReadBytes
  const length = Math.min(args.limit ?? maxReadBytes, maxReadBytes, available)
  const text = (await readAt(handle, length, offset)).toString('utf8')
  if (!limitedByCaller && available > maxReadBytes) {
    return ok(appendNotice(text, `[file truncated: ${st.size} bytes total]`))
  }
  return ok(text)
}

async function readFile (opts: FileReadToolOptions, args: FileReadArgs, ctx: ToolContext): Promise<ToolResult> {
  const target = await resolveInWorkspace(ctx.workspaceDir, args.path)
  // stat before open: opening a FIFO or device can block or have side effects.
  const checked = await fs.stat(target)
  if (checked.isDirectory()) return fail('is a directory')
  if (!checked.isFile()) return fail('not a regular file')
  if (ctx.signal.aborted) return fail('cancelled')
  const handle = await fs.open(target, READ_FLAGS)
  try {
    return await readSlice(handle, checked, args, opts.maxReadBytes)
  } finally {
    await handle.close()
  }
}

export function createFileReadTool (opts: FileReadToolOptions): Tool {
  return defineTool<FileReadArgs>({
    name: 'file_read',
    description: `Read a text file in the workspace. Returns at most ${opts.maxReadBytes} bytes; use offset and limit (in bytes) to page through larger files.`,
    effects: 'read',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, description: 'Path relative to the workspace.' },
        offset: { type: 'integer', minimum: 0, description: 'Byte offset to start reading at.' },
        limit: { type: 'integer', minimum: 1, description: 'Maximum number of bytes to read.' }
      },
      required: ['path'],
      additionalProperties: false
    },
    async execute (args, ctx) {
      if (ctx.signal.aborted) return fail('cancelled')
      try {
        return await readFile(opts, args, ctx)
      } catch (err) {
        return filesystemFailure(err)
      }
    }
  })
}
