/**
 * The `file_write` tool: writes or appends text to a file inside the turn's workspace, as the
 * workspace's owner. A replacing write goes to a temporary file in the same folder and is renamed
 * over the target, so readers never see a half-written file (file-operations.ts).
 */
import { Buffer } from 'node:buffer'
import { defineTool, fail, type Tool } from '../contract.js'
import { filesystemFailure } from './workspace.js'
import type { WorkspaceFiles } from './workspace-files.js'

export interface FileWriteToolOptions {
  maxWriteBytes: number
  files: WorkspaceFiles
}

interface FileWriteArgs {
  path: string
  content: string
  append?: boolean
  create_dirs?: boolean
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
      const size = Buffer.byteLength(args.content, 'utf8')
      if (size > opts.maxWriteBytes) return fail(`content is ${size} bytes, over the ${opts.maxWriteBytes}-byte write limit`)
      try {
        const request = {
          op: 'write' as const, dir: ctx.workspaceDir, path: args.path, content: args.content,
          append: args.append === true, createDirs: args.create_dirs !== false
        }
        return await opts.files.run(request, ctx.workspaceOwner, ctx.signal)
      } catch (err) {
        return filesystemFailure(err)
      }
    }
  })
}
