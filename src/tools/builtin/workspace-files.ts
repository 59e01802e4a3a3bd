/**
 * Where the file tools' requests run. A workspace with no owner of its own (an unprivileged
 * gateway, or no sandbox user) is worked on here, in the gateway, as the gateway's user. A
 * workspace owned by a sandbox user (a root gateway) is worked on by a file worker running as
 * that user (file-worker.ts): one long-lived child process per owner, started on the owner's
 * first request and ended after a while without one. Either way every path is resolved by the
 * same walk (workspace-walk.ts). docs/decisions/0181.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { closeSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { fail, type FileOwner, type ToolResult } from '../contract.js'
import type { WorkerReply, WorkerRequest } from './file-worker.js'
import { runFileRequest, type FileRequest } from './file-operations.js'
import { filesystemFailure } from './workspace.js'
import { openRoot } from './workspace-walk.js'

export interface WorkspaceFilesOptions {
  /** The canonical workspace root every request's folder lies below. */
  root: string
}

/** A worker ends after this long without a request; the next request of its owner starts another. */
const WORKER_IDLE_MS = 30_000
/**
 * Workers kept at once. Past it, an idle one is ended before another starts; workers that are
 * busy are never ended, so the count can exceed this only while that many owners have a request
 * in flight at the same moment.
 */
const MAX_WORKERS = 32
/** How long a closing worker may take to exit on its own before it is killed. */
const WORKER_EXIT_MS = 2_000

/** The worker's entry beside this module, as built (.js) or as run from source under tsx (.ts). */
function workerEntry (): { file: string, execArgv: string[] } {
  const here = fileURLToPath(import.meta.url)
  const ext = path.extname(here)
  const file = path.join(path.dirname(here), `file-worker${ext}`)
  return { file, execArgv: ext === '.ts' ? ['--import', import.meta.resolve('tsx')] : [] }
}

function ownerKey (owner: FileOwner): string {
  return `${owner.uid}:${owner.gid}`
}

interface Pending {
  resolve: (result: ToolResult) => void
  detach: () => void
}

class FileWorker {
  private readonly child: ChildProcess
  private readonly pending = new Map<number, Pending>()
  /** Null once the worker is ready; otherwise why it never will be. */
  private readonly started: Promise<string | null>
  private readonly exited: Promise<void>
  private nextId = 1
  private idleTimer: NodeJS.Timeout | null = null
  private state: 'running' | 'closing' | 'exited' = 'running'
  lastUsed = Date.now()

  constructor (root: string, readonly owner: FileOwner, onExit: (worker: FileWorker) => void) {
    const entry = workerEntry()
    // No environment: nothing of the gateway's (credentials included) reaches a process of the sandbox uid.
    this.child = fork(entry.file, [root, String(owner.uid), String(owner.gid)], {
      cwd: '/', env: {}, execArgv: entry.execArgv, stdio: ['ignore', 'ignore', 'inherit', 'ipc']
    })
    let started: (why: string | null) => void = () => {}
    this.started = new Promise((resolve) => { started = resolve })
    let exited: () => void = () => {}
    this.exited = new Promise((resolve) => { exited = resolve })
    this.child.on('message', (reply: WorkerReply) => {
      if (reply.type === 'ready') started(null)
      else if (reply.type === 'unusable') started(reply.message)
      else this.settle(reply)
    })
    const finish = (why: string): void => {
      if (this.state === 'exited') return
      this.state = 'exited'
      if (this.idleTimer !== null) clearTimeout(this.idleTimer)
      started(why)
      for (const [id, p] of this.pending) this.answer(id, p, fail(`the file worker stopped (${why})`))
      onExit(this)
      exited()
    }
    this.child.on('exit', (code, signal) => { finish(signal ?? `exit code ${String(code)}`) })
    this.child.on('error', (err) => { finish(err.message) })
  }

  get idle (): boolean {
    return this.pending.size === 0
  }

  /** Takes requests: neither exited nor on its way out. */
  get open (): boolean {
    return this.state === 'running'
  }

  async run (request: FileRequest, signal: AbortSignal): Promise<ToolResult> {
    this.lastUsed = Date.now()
    if (this.idleTimer !== null) clearTimeout(this.idleTimer)
    this.idleTimer = null
    const id = this.nextId++
    const result = new Promise<ToolResult>((resolve) => {
      const onAbort = (): void => { this.post({ type: 'cancel', id }) }
      signal.addEventListener('abort', onAbort, { once: true })
      this.pending.set(id, { resolve, detach: () => { signal.removeEventListener('abort', onAbort) } })
    })
    this.holdGateway(true)
    const unusable = await this.started
    const p = this.pending.get(id)
    if (p !== undefined) {
      if (unusable !== null) this.answer(id, p, fail(`the file worker could not start: ${unusable}`))
      else if (!this.post({ type: 'run', id, request })) this.answer(id, p, fail('the file worker stopped'))
    }
    return await result
  }

  async close (): Promise<void> {
    if (this.state === 'running') {
      this.state = 'closing'
      // The worker exits when its channel closes; one that does not is killed.
      if (this.child.connected) this.child.disconnect()
    }
    if (this.state === 'exited') return
    const killer = setTimeout(() => { this.child.kill('SIGKILL') }, WORKER_EXIT_MS)
    await this.exited
    clearTimeout(killer)
  }

  private post (message: WorkerRequest): boolean {
    if (!this.child.connected) return false
    this.child.send(message)
    return true
  }

  private settle (reply: WorkerReply): void {
    if (reply.type !== 'done' && reply.type !== 'failed') return
    const p = this.pending.get(reply.id)
    if (p === undefined) return
    this.answer(reply.id, p, reply.type === 'done' ? reply.result : fail(`the file worker failed: ${reply.message}`))
  }

  private answer (id: number, p: Pending, result: ToolResult): void {
    this.pending.delete(id)
    p.detach()
    p.resolve(result)
    if (this.idle && this.state === 'running') {
      this.holdGateway(false)
      this.idleTimer = setTimeout(() => { void this.close() }, WORKER_IDLE_MS).unref()
    }
  }

  /** The child and its channel keep the gateway's event loop alive only while a request waits on them. */
  private holdGateway (hold: boolean): void {
    if (hold) {
      this.child.ref()
      this.child.channel?.ref()
    } else {
      this.child.unref()
      this.child.channel?.unref()
    }
  }
}

export class WorkspaceFiles {
  /** The walk opens names through /proc/self/fd, which only Linux offers. */
  static readonly supported = process.platform === 'linux'

  private readonly workers = new Map<string, FileWorker>()

  constructor (private readonly options: WorkspaceFilesOptions) {}

  /**
   * Runs one request in its workspace folder: as `owner` in that owner's worker, or here, as the
   * gateway's user, when the folder has no owner of its own. Every failure is the tool's result.
   */
  async run (request: FileRequest, owner: FileOwner | null, signal: AbortSignal): Promise<ToolResult> {
    if (!WorkspaceFiles.supported) return fail('file tools need Linux')
    if (owner !== null) return await this.worker(owner).run(request, signal)
    try {
      const root = openRoot(this.options.root)
      try {
        return await runFileRequest({ fd: root, path: this.options.root }, request, () => signal.aborted)
      } finally {
        closeSync(root)
      }
    } catch (err) {
      return filesystemFailure(err)
    }
  }

  /** Ends every worker. */
  async close (): Promise<void> {
    await Promise.all([...this.workers.values()].map(async (w) => { await w.close() }))
  }

  private worker (owner: FileOwner): FileWorker {
    const key = ownerKey(owner)
    const known = this.workers.get(key)
    if (known?.open === true) return known
    if (this.workers.size >= MAX_WORKERS) {
      const idle = [...this.workers.values()].filter((w) => w.idle).sort((a, b) => a.lastUsed - b.lastUsed)[0]
      if (idle !== undefined) {
        this.workers.delete(ownerKey(idle.owner))
        void idle.close()
      }
    }
    const worker = new FileWorker(this.options.root, owner, (gone) => {
      if (this.workers.get(key) === gone) this.workers.delete(key)
    })
    this.workers.set(key, worker)
    return worker
  }
}
