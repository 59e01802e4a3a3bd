/**
 * Delivers one turn's live events in seq order with no gap and no duplicate, whatever order and
 * multiplicity they arrive in (local publish and its Redis echo, pub/sub messages lost around a
 * reconnect). An event past a hole waits while the hole is fetched from the shared log; if the
 * log never gets it (lost with no one left to re-publish it), the feed moves on after
 * `giveUpMs` and reports the hole rather than stall forever.
 */
import type { BusEnvelope } from './bus.js'

export interface OrderedFeedOptions {
  deliver: (envelope: BusEnvelope) => void
  /** Events after `afterSeq`, ascending, from the shared log (may be empty or have holes). */
  fetch: (afterSeq: number) => Promise<BusEnvelope[]>
  retryMs: number
  giveUpMs: number
  maxHeld: number
  onHole: (fromSeq: number, toSeq: number) => void
}

export class OrderedFeed {
  private readonly options: OrderedFeedOptions
  private cursor: number | null = null
  private readonly held = new Map<number, BusEnvelope>()
  private filling = false
  private catchUpWanted = false
  private closed = false
  private timer: NodeJS.Timeout | undefined
  private wake: (() => void) | null = null

  constructor (options: OrderedFeedOptions) {
    this.options = options
  }

  /** Highest seq delivered (or known to precede this feed); null until started. */
  get position (): number | null {
    return this.cursor
  }

  /** Sets where live delivery begins; events up to `cursor` are the replay's job. */
  start (cursor: number): void {
    if (this.cursor !== null || this.closed) return
    this.cursor = cursor
    for (const seq of this.held.keys()) if (seq <= cursor) this.held.delete(seq)
    this.drain()
    if (this.held.size > 0) this.fill()
  }

  offer (envelope: BusEnvelope): void {
    if (this.closed) return
    if (this.cursor === null) {
      this.hold(envelope)
      return
    }
    if (envelope.seq <= this.cursor) return
    if (envelope.seq === this.cursor + 1) {
      this.advance(envelope)
      this.drain()
      return
    }
    this.hold(envelope)
    this.fill()
  }

  /** After a reconnect: events may have been missed even though none arrived out of order. */
  catchUp (): void {
    if (this.cursor === null || this.closed) return
    this.catchUpWanted = true
    this.fill()
  }

  close (): void {
    this.closed = true
    this.held.clear()
    clearTimeout(this.timer)
    this.wake?.()
  }

  private hold (envelope: BusEnvelope): void {
    this.held.set(envelope.seq, envelope)
    if (this.held.size > this.options.maxHeld) this.skipHole()
  }

  private advance (envelope: BusEnvelope): void {
    this.cursor = envelope.seq
    this.options.deliver(envelope)
  }

  private drain (): void {
    for (;;) {
      if (this.cursor === null || this.closed) return
      const next = this.held.get(this.cursor + 1)
      if (next === undefined) return
      this.held.delete(next.seq)
      this.advance(next)
    }
  }

  private lowestHeld (): number {
    let low = Infinity
    for (const seq of this.held.keys()) low = Math.min(low, seq)
    return low
  }

  private skipHole (): void {
    if (this.cursor === null) return
    const low = this.lowestHeld()
    if (low === Infinity) return
    this.options.onHole(this.cursor + 1, low - 1)
    this.cursor = low - 1
    this.drain()
  }

  private fill (): void {
    if (this.filling || this.closed) return
    this.filling = true
    void this.fillLoop().finally(() => { this.filling = false })
  }

  private async fillLoop (): Promise<void> {
    const started = Date.now()
    while (!this.closed && this.cursor !== null && (this.held.size > 0 || this.catchUpWanted)) {
      this.catchUpWanted = false
      let fetched: BusEnvelope[] = []
      try {
        fetched = await this.options.fetch(this.cursor)
      } catch {
        // Unreachable shared log: retried below, or caught up by the next reconnect.
      }
      for (const e of fetched) {
        if (this.closed || this.cursor === null) return
        if (e.seq <= this.cursor) continue
        if (e.seq !== this.cursor + 1) break
        this.advance(e)
      }
      this.drain()
      if (this.held.size === 0) continue
      if (Date.now() - started >= this.options.giveUpMs) {
        this.skipHole()
        continue
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve
        this.timer = setTimeout(resolve, this.options.retryMs)
        this.timer.unref()
      })
      this.wake = null
    }
  }
}
