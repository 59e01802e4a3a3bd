/**
 * The file tools' failures: a path the workspace refuses, and the errno codes the file system
 * answers with, each as a tool failure the model can read. (How paths are resolved without
 * leaving the workspace: workspace-walk.ts.)
 */
import { fail, type ToolResult } from '../result.js'

export type WorkspaceErrorCode = 'PATH_OUTSIDE_WORKSPACE' | 'INVALID_PATH'

export class WorkspaceError extends Error {
  readonly code: WorkspaceErrorCode

  constructor (code: WorkspaceErrorCode, message: string) {
    super(message)
    this.name = 'WorkspaceError'
    this.code = code
  }
}

export function errnoCode (err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined
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
