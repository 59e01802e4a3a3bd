/**
 * Optional instrumentation of the SQLite store, for the benchmark and the tests that count the
 * SQL work of a turn. Off by default and free when off: a store without a probe gives
 * better-sqlite3 no statement logger at all.
 */

export interface SqlProbe {
  /**
   * Each statement SQLite runs, as its expanded text, before it runs. `inTransaction` is true
   * inside an explicit BEGIN … COMMIT (the COMMIT itself included).
   */
  statement (sql: string, inTransaction: boolean): void
  /** Each WAL checkpoint: frames the WAL held, and how many of them reached the database file. */
  checkpoint (walFrames: number, checkpointed: number): void
}

export interface SqlCounts {
  /** Statements SQLite ran, BEGIN and COMMIT included; checkpoint pragmas excluded. */
  statements: number
  /** Write transactions committed: explicit COMMITs plus writes run outside a transaction. */
  commits: number
  checkpoints: number
  /** INSERT statements per table (a row each in Tollgate's statements). */
  inserts: Record<string, number>
}

const WRITE = /^\s*(INSERT|UPDATE|DELETE|REPLACE)\b/i
const COMMIT = /^\s*(COMMIT|END)\b/i
const PRAGMA = /^\s*PRAGMA\b/i
const INSERT_INTO = /^\s*INSERT(?:\s+OR\s+\w+)?\s+INTO\s+"?(\w+)/i

/** Counts statements, commits and checkpoints; `waitForCheckpoint` awaits the next checkpoint. */
export class SqlCounter implements SqlProbe {
  private counts: SqlCounts = { statements: 0, commits: 0, checkpoints: 0, inserts: {} }
  private checkpointWaiters: Array<(frames: { walFrames: number, checkpointed: number }) => void> = []

  statement (sql: string, inTransaction: boolean): void {
    if (PRAGMA.test(sql)) return
    this.counts.statements++
    if (COMMIT.test(sql) || (!inTransaction && WRITE.test(sql))) this.counts.commits++
    const table = INSERT_INTO.exec(sql)?.[1]
    if (table !== undefined) this.counts.inserts[table] = (this.counts.inserts[table] ?? 0) + 1
  }

  checkpoint (walFrames: number, checkpointed: number): void {
    this.counts.checkpoints++
    const waiters = this.checkpointWaiters
    this.checkpointWaiters = []
    for (const w of waiters) w({ walFrames, checkpointed })
  }

  snapshot (): SqlCounts {
    return { ...this.counts, inserts: { ...this.counts.inserts } }
  }

  /** The next checkpoint's outcome. */
  async waitForCheckpoint (): Promise<{ walFrames: number, checkpointed: number }> {
    return await new Promise((resolve) => { this.checkpointWaiters.push(resolve) })
  }
}
