/**
 * What a finished turn leaves behind for `turns.retention_ms` (its event log, receipt key,
 * idempotency entry) expires through one FIFO swept by one timer, instead of a timer per turn
 * and a scan of everything on every turn start. Entries are added with the same retention, so
 * the queue is in expiry order and a sweep stops at the first live entry.
 */
interface Entry {
  expires: number
  expire: () => void
}

export class RetentionQueue {
  private entries: Entry[] = []
  private head = 0
  private readonly timer: NodeJS.Timeout

  constructor (retentionMs: number) {
    this.timer = setInterval(() => { this.sweep(Date.now()) }, Math.min(Math.max(retentionMs, 1000), 60_000))
    this.timer.unref()
  }

  add (expires: number, expire: () => void): void {
    this.entries.push({ expires, expire })
  }

  sweep (now: number): void {
    while (this.head < this.entries.length) {
      const entry = this.entries[this.head] as Entry
      if (entry.expires > now) break
      this.head++
      entry.expire()
    }
    // Compact once the consumed prefix dominates, keeping sweeps O(expired) amortised.
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head)
      this.head = 0
    }
  }

  get size (): number {
    return this.entries.length - this.head
  }

  close (): void {
    clearInterval(this.timer)
  }
}
