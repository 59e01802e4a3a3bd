/**
 * The file worker: a child process of a root gateway that runs file requests as one workspace
 * owner, so what the file tools do in a tenant's folder the kernel checks against that owner's
 * rights, never root's. Started as root with `<root> <uid> <gid>`, it opens the workspace root,
 * then drops to the owner for good (supplementary groups, then gid, then uid: real, effective and
 * saved ids alike) before it takes a request. The root stays reachable through the descriptor
 * opened before the drop, whatever the folders above it allow. Changing its ids also makes the
 * kernel mark the process not dumpable, so other processes of that uid cannot trace it.
 * It ends when the gateway disconnects (or dies). docs/decisions/0181.
 */
import type { ToolResult } from '../result.js'
import { runFileRequest, type FileRequest } from './file-operations.js'
import { openRoot } from './workspace-walk.js'

/** Gateway → worker. */
export type WorkerRequest =
  | { type: 'run', id: number, request: FileRequest }
  | { type: 'cancel', id: number }

/** Worker → gateway. */
export type WorkerReply =
  | { type: 'ready' }
  | { type: 'unusable', message: string }
  | { type: 'done', id: number, result: ToolResult }
  | { type: 'failed', id: number, message: string }

function send (reply: WorkerReply): void {
  // The gateway may have gone between the request and its answer (it closed, or died): with a
  // callback a failed write is reported here instead of as an unhandled 'error' event.
  if (process.connected !== true) return
  process.send?.(reply, undefined, undefined, (err: Error | null) => { if (err !== null) process.exit(0) })
}

function dropTo (uid: number, gid: number): void {
  if (process.setgroups === undefined || process.setgid === undefined || process.setuid === undefined || process.getgroups === undefined) {
    throw new Error('this platform cannot change a process\'s user')
  }
  process.setgroups([])
  process.setgid(gid)
  process.setuid(uid)
  const groups = process.getgroups()
  const dropped = process.getuid?.() === uid && process.geteuid?.() === uid && process.getgid?.() === gid &&
    process.getegid?.() === gid && groups.every((g) => g === gid)
  if (!dropped) throw new Error(`still running as uid ${String(process.geteuid?.())} after the drop to ${uid}`)
}

function isRequest (message: unknown): message is WorkerRequest {
  if (typeof message !== 'object' || message === null) return false
  const m = message as Record<string, unknown>
  return (m.type === 'run' || m.type === 'cancel') && typeof m.id === 'number'
}

function serve (root: string, uid: number, gid: number): void {
  // Held for the worker's life: after the drop the root may be out of reach by its path.
  const open = { fd: openRoot(root), path: root }
  dropTo(uid, gid)
  // Requests in progress, each with whether the gateway has cancelled it since.
  const running = new Map<number, boolean>()
  process.on('message', (message: unknown) => {
    if (!isRequest(message)) return
    const { id } = message
    if (message.type === 'cancel') {
      if (running.has(id)) running.set(id, true)
      return
    }
    running.set(id, false)
    runFileRequest(open, message.request, () => running.get(id) === true).then(
      (result) => { send({ type: 'done', id, result }) },
      (err: unknown) => { send({ type: 'failed', id, message: err instanceof Error ? err.message : String(err) }) }
    ).finally(() => { running.delete(id) })
  })
  send({ type: 'ready' })
}

// The gateway is gone (closed the channel, or died): nothing is left to answer to.
process.on('disconnect', () => { process.exit(0) })
const [root, uid, gid] = process.argv.slice(2)
try {
  serve(String(root), Number(uid), Number(gid))
} catch (err) {
  const reply: WorkerReply = { type: 'unusable', message: err instanceof Error ? err.message : String(err) }
  process.send?.(reply, () => { process.exit(1) })
}
