/**
 * WAL checkpoints of the SQLite store, off the event loop. A worker thread with a connection of
 * its own copies the WAL into the database file and syncs it (PASSIVE: the gateway's writes go on
 * meanwhile), in passes until little is left. That does not make the WAL restart under load: a
 * checkpointer racing a busy writer almost never finds every frame copied, and the WAL would grow
 * for as long as the load lasts. So once the WAL has grown past `catchUpFrames`, the gateway's
 * own connection copies the last frames (a catch-up on the event loop: mostly the cost of its
 * two syncs, ~10–30 ms on a 2-core VM, paid every few seconds under saturation instead of a full
 * copy every second), and its next write starts the WAL over. If the worker fails, the timer
 * checkpoints on the event loop as before.
 */
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

export interface CheckpointResult {
  walFrames: number
  checkpointed: number
}

export interface WalCheckpointerOptions {
  path: string
  periodMs: number
  /** WAL size (frames) from which a worker's copy is followed by a catch-up on the event loop. */
  catchUpFrames: number
  /** A PASSIVE checkpoint on the gateway's own connection (the catch-up, and the fallback). */
  checkpointHere: () => CheckpointResult
  /** Each checkpoint's outcome, the worker's and the catch-up's. */
  onResult: (result: CheckpointResult) => void
  onError: (err: unknown) => void
}

// Plain CommonJS, evaluated in the worker: no module of ours to resolve, so it runs the same from
// src (tsx) and from dist.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.module)
const db = new Database(workerData.path, { timeout: workerData.timeoutMs })
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)')
parentPort.on('message', () => {
  try {
    // Again while a pass left many frames behind (committed while it copied): each pass is
    // shorter than the last, and the catch-up on the gateway's loop gets only the last few.
    let row = checkpoint.get()
    for (let pass = 1; pass < workerData.maxPasses && row.log - row.checkpointed > workerData.leaveFrames; pass++) row = checkpoint.get()
    parentPort.postMessage({ walFrames: row.log, checkpointed: row.checkpointed })
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message ? err.message : err) })
  }
})
`

/** Passes of the worker per checkpoint, at most, and the frames it may leave to the catch-up. */
const MAX_PASSES = 4
const LEAVE_FRAMES = 32

type WorkerAnswer = CheckpointResult | { error: string }

export class WalCheckpointer {
  private worker: Worker | null
  private copying = false
  private closed = false
  private readonly timer: NodeJS.Timeout

  constructor (private readonly options: WalCheckpointerOptions) {
    const module = createRequire(import.meta.url).resolve('better-sqlite3')
    const workerData = { module, path: options.path, timeoutMs: 1000, maxPasses: MAX_PASSES, leaveFrames: LEAVE_FRAMES }
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData })
    this.worker.unref()
    this.worker.on('message', (answer: WorkerAnswer) => { this.copied(answer) })
    this.worker.on('error', (err) => {
      this.options.onError(err)
      this.worker = null
      this.copying = false
    })
    this.timer = setInterval(() => { this.tick() }, options.periodMs).unref()
  }

  private tick (): void {
    if (this.closed || this.copying) return
    if (this.worker === null) {
      this.here()
      return
    }
    this.copying = true
    this.worker.postMessage('checkpoint')
  }

  private copied (answer: WorkerAnswer): void {
    this.copying = false
    if (this.closed) return
    if ('error' in answer) {
      this.options.onError(new Error(answer.error))
      return
    }
    this.options.onResult(answer)
    if (answer.walFrames >= this.options.catchUpFrames) this.here()
  }

  private here (): void {
    try {
      this.options.onResult(this.options.checkpointHere())
    } catch (err) {
      this.options.onError(err)
    }
  }

  /** Stops the timer and the worker (a copy under way finishes first: SQLite cannot be interrupted). */
  async close (): Promise<void> {
    this.closed = true
    clearInterval(this.timer)
    const worker = this.worker
    this.worker = null
    if (worker !== null) await worker.terminate()
  }
}
