/**
 * Tollgate's built-in tools, assembled from one options object. Every tool is confined by these
 * options and by the workspace folder each call's context names; none reads configuration or
 * process state of its own (except the shell's env allowlist).
 */
import type { Tool } from '../contract.js'
import { createFileReadTool } from './file-read.js'
import { createFileWriteTool } from './file-write.js'
import { createHttpRequestTool, type HttpOptions } from './http-request.js'
import { createShellTool, type ShellToolOptions } from './shell.js'
import type { WorkspaceFiles } from './workspace-files.js'

export interface BuiltinToolOptions {
  /** Null: `shell` is not offered (its sandbox does not work here). */
  shell: ShellToolOptions | null
  /** `workspace` runs the file tools' requests (in the gateway, or as the workspace's owner). */
  files: { maxReadBytes: number, maxWriteBytes: number, workspace: WorkspaceFiles }
  http: HttpOptions
}

export const BUILTIN_TOOL_NAMES: readonly string[] = Object.freeze(['shell', 'file_read', 'file_write', 'http_request'])

export function createBuiltinTools (opts: BuiltinToolOptions): Tool[] {
  return [
    ...(opts.shell === null ? [] : [createShellTool(opts.shell)]),
    createFileReadTool({ maxReadBytes: opts.files.maxReadBytes, files: opts.files.workspace }),
    createFileWriteTool({ maxWriteBytes: opts.files.maxWriteBytes, files: opts.files.workspace }),
    createHttpRequestTool(opts.http)
  ]
}

export { classifyCommand, type CommandRisk } from './shell-policy.js'
export { isPrivateAddress } from './net-guard.js'
export { WorkspaceError, type WorkspaceErrorCode } from './workspace.js'
