/**
 * The `file_read` tool: reads a bounded slice of a regular text file inside the turn's workspace,
 * as the workspace's owner (file-operations.ts does the reading, workspace-files.ts decides where).
 */
import { defineTool, fail, type Tool } from '../contract.js'
import { filesystemFailure } from './workspace.js'
import type { WorkspaceFiles } from './workspace-files.js'

export interface FileReadToolOptions {
  maxReadBytes: number
  files: WorkspaceFiles
}

interface FileReadArgs {
  path: string
  offset?: number
  limit?: number
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
        const request = { op: 'read' as const, dir: ctx.workspaceDir, path: args.path, offset: args.offset, limit: args.limit, maxReadBytes: opts.maxReadBytes }
        return await opts.files.run(request, ctx.workspaceOwner, ctx.signal)
      } catch (err) {
        return filesystemFailure(err)
      }
    }
  })
}
