/**
 * Writes that ride on the SQLite store's next event-log commit. On SQLite every commit is paid
 * on the one JavaScript thread (the changed pages go to the WAL there), so a writer that commits
 * on its own — the audit chain appends an entry for each rule decision, approval, tool run and
 * receipt — would add commits to every turn. A joined write runs inside the transaction the
 * journal's group commit opens at the end of the tick, with that tick's events; a write that no
 * event transaction picks up by the end of the next tick commits on its own, together with
 * whatever else joined meanwhile (decision 0277).
 *
 * Each write runs in a savepoint of its own: one that fails is undone alone and rejects its
 * caller, never the events it rides with. If the transaction as a whole fails (its events are
 * retried by the journal's writer), the writes that ran in it go back to the queue.
 */
import type Database from 'better-sqlite3'

interface Joined {
  write: () => void
  resolve: () => void
  reject: (err: unknown) => void
}

export class SharedCommit {
  private queue: Joined[] = []
  private fallbackQueued = false
  private readonly savepoint: (write: () => void) => void
  private readonly alone: (taken: readonly Joined[]) => Joined[]

  constructor (private readonly db: Database.Database) {
    // better-sqlite3 runs a transaction function called inside another as a savepoint.
    this.savepoint = db.transaction((write: () => void) => { write() })
    this.alone = db.transaction((taken: readonly Joined[]) => this.runEach(taken))
  }

  /** Runs `write` inside a coming write transaction; resolves once that transaction committed it. */
  async join (write: () => void): Promise<void> {
    return await new Promise<void>((resolve, reject) => {
      this.queue.push({ write, resolve, reject })
      this.queueFallback()
    })
  }

  /**
   * Runs the queued writes inside the caller's transaction: `commit` runs the transaction, given
   * a function to call inside it. The writes' callers learn the outcome once it committed.
   */
  within<T>(commit: (inside: () => void) => T): T {
    if (this.queue.length === 0) return commit(() => {})
    const taken = this.queue
    this.queue = []
    let ran: Joined[] | null = null
    try {
      const result = commit(() => { ran = this.runEach(taken) })
      if (ran === null) this.requeue(taken)
      else for (const j of ran as Joined[]) j.resolve()
      return result
    } catch (err) {
      // Undone with the transaction (or never run): they wait for the next one; those that failed
      // alone were told already.
      this.requeue(ran ?? taken)
      throw err
    }
  }

  private requeue (writes: readonly Joined[]): void {
    this.queue = [...writes, ...this.queue]
    if (this.queue.length > 0) this.queueFallback()
  }

  /** Commits what is still queued, on its own (the store's close calls this too). */
  readonly commitQueued = (): void => {
    this.fallbackQueued = false
    if (this.queue.length === 0 || !this.db.open) return
    const taken = this.queue
    this.queue = []
    try {
      for (const j of this.alone(taken)) j.resolve()
    } catch (err) {
      // The transaction failed as a whole (a write that failed alone was told already).
      for (const j of taken) j.reject(err)
    }
  }

  /** The writes that succeeded; each failed one is rejected now (its savepoint undone). */
  private runEach (taken: readonly Joined[]): Joined[] {
    const ran: Joined[] = []
    for (const j of taken) {
      try {
        this.savepoint(j.write)
        ran.push(j)
      } catch (err) {
        j.reject(err)
      }
    }
    return ran
  }

  private queueFallback (): void {
    if (this.fallbackQueued) return
    this.fallbackQueued = true
    // Two ticks: the journal's group commit of this tick (queued with setImmediate) comes first.
    setImmediate(() => { setImmediate(this.commitQueued) })
  }
}
