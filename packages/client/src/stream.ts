/**
 * The events of one turn as the client has accepted them: strictly seq+1 after seq+1, each once,
 * whatever reconnects, replays and duplicate deliveries happened underneath. Any number of
 * async iterators can read it, each from the seq it asks for, and each ends at the terminal event.
 */
import { TollgateClientError } from './errors.js'
import type { EventEnvelope } from './types.js'

const TERMINAL = new Set(['turn.completed', 'turn.cancelled', 'turn.failed'])

export function isTerminal (envelope: EventEnvelope): boolean {
  return TERMINAL.has(envelope.event.kind)
}

export type OfferResult = 'accepted' | 'duplicate' | 'gap'

export class TurnStream implements AsyncIterable<EventEnvelope> {
  readonly turnId: string
  /** Seq of the first event this stream holds minus one: what it subscribed after. */
  readonly baseSeq: number
  readonly events: EventEnvelope[] = []
  sessionId: string | undefined
  private failure: TollgateClientError | null = null
  private wakers = new Set<() => void>()
  private readonly endWaiters: Array<{ resolve: (e: EventEnvelope) => void, reject: (err: Error) => void }> = []

  constructor (turnId: string, baseSeq = 0) {
    this.turnId = turnId
    this.baseSeq = baseSeq
  }

  get lastSeq (): number {
    return this.baseSeq + this.events.length
  }

  get terminal (): EventEnvelope | undefined {
    const last = this.events.at(-1)
    return last !== undefined && isTerminal(last) ? last : undefined
  }

  get error (): TollgateClientError | null {
    return this.failure
  }

  /** True while the stream still expects events (neither ended nor failed). */
  get live (): boolean {
    return this.terminal === undefined && this.failure === null
  }

  /** Takes the next event only if it is exactly the one after the last; tells the caller otherwise. */
  offer (envelope: EventEnvelope): OfferResult {
    if (!this.live || envelope.seq <= this.lastSeq) return 'duplicate'
    if (envelope.seq !== this.lastSeq + 1) return 'gap'
    this.events.push(envelope)
    if (isTerminal(envelope)) for (const w of this.endWaiters.splice(0)) w.resolve(envelope)
    this.wake()
    return 'accepted'
  }

  fail (error: TollgateClientError): void {
    if (!this.live) return
    this.failure = error
    for (const w of this.endWaiters.splice(0)) w.reject(error)
    this.wake()
  }

  /** Resolves with the terminal event; rejects if the stream failed first. */
  async done (): Promise<EventEnvelope> {
    const terminal = this.terminal
    if (terminal !== undefined) return terminal
    if (this.failure !== null) throw this.failure
    return await new Promise((resolve, reject) => { this.endWaiters.push({ resolve, reject }) })
  }

  [Symbol.asyncIterator] (): AsyncIterator<EventEnvelope> {
    return this.from(this.baseSeq)[Symbol.asyncIterator]()
  }

  /** Events with seq > afterSeq, then live ones, until the terminal event. */
  async * from (afterSeq: number): AsyncGenerator<EventEnvelope, void, undefined> {
    let index = Math.max(0, afterSeq - this.baseSeq)
    for (;;) {
      while (index < this.events.length) {
        yield this.events[index] as EventEnvelope
        index++
      }
      if (this.terminal !== undefined) return
      if (this.failure !== null) throw this.failure
      await new Promise<void>((resolve) => { this.wakers.add(resolve) })
    }
  }

  private wake (): void {
    const wakers = this.wakers
    this.wakers = new Set()
    for (const w of wakers) w()
  }
}
