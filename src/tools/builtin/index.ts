/**
 * Tollgate's built-in tools, assembled from one options object. Every tool is confined by these
 * options; none reads configuration or process state of its own (except the shell's env allowlist).
 */
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import type { Tool } from '../tool.js'
import { createFileReadTool } from './file-read.js'
import { createFileWriteTool } from './file-write.js'
import { createHttpRequestTool, type HttpOptions } from './http-request.js'
import { createShellTool, type ShellOptions } from './shell.js'

export interface BuiltinToolOptions {
  /** Absolute; created if missing. */
  workspaceDir: string
  shell: ShellOptions
  files: { maxReadBytes: number, maxWriteBytes: number }
  http: HttpOptions
}

export const BUILTIN_TOOL_NAMES: readonly string[] = Object.freeze(['shell', 'file_read', 'file_write', 'http_request'])

export function createBuiltinTools (opts: BuiltinToolOptions): Tool[] {
  if (!path.isAbsolute(opts.workspaceDir)) {
    throw new Error(`workspaceDir must be an absolute path, got ${JSON.stringify(opts.workspaceDir)}`)
  }
  mkdirSync(opts.workspaceDir, { recursive: true })
  const { workspaceDir } = opts
  return [
    createShellTool({ ...opts.shell, workspaceDir }),
    createFileReadTool({ workspaceDir, maxReadBytes: opts.files.maxReadBytes }),
    createFileWriteTool({ workspaceDir, maxWriteBytes: opts.files.maxWriteBytes }),
    createHttpRequestTool(opts.http)
  ]
}

export { classifyCommand, type CommandRisk } from './shell-policy.js'
export { isPrivateAddress } from './net-guard.js'
export { resolveInWorkspace, WorkspaceError, type WorkspaceErrorCode } from './workspace.js'
