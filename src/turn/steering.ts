/**
 * Steering: messages a person adds while a turn runs. The service offers them (bounded, refused
 * once the turn stops taking them); the loop drains them into the history at the start of each
 * iteration, in order, and asks before ending whether one is still waiting (then it runs one more
 * iteration instead of dropping it).
 */
import type { ChatMessage } from '../providers/types.js'
import { TollgateError } from '../core/errors.js'

export class SteeringQueue {
  private readonly waiting: string[] = []
  private closedFlag = false
  /** Messages offered over the turn's whole life (a resumed turn counts the ones before its restart). */
  private offeredCount: number
  /** Messages that joined the history (a checkpoint stores it: the rest are queued again on resume). */
  private consumedCount: number

  constructor (private readonly max: number, already: { offered: number, consumed: number } = { offered: 0, consumed: 0 }) {
    this.offeredCount = already.offered
    this.consumedCount = already.consumed
  }

  /** Queues a message; answers its place among the turn's steering messages (from 1) and how many wait. */
  offer (message: string): { n: number, queued: number } {
    if (this.closedFlag) throw new TollgateError('STEERING_CLOSED')
    if (this.waiting.length >= this.max) {
      throw new TollgateError('STEERING_QUEUE_FULL', `at most ${this.max} messages wait for the turn's next model call`)
    }
    this.waiting.push(message)
    this.offeredCount += 1
    return { n: this.offeredCount, queued: this.waiting.length }
  }

  /** A message queued before a restart and not in the history then: waits again, bounds aside. */
  restore (message: string): void {
    this.waiting.push(message)
  }

  pending (): boolean {
    return this.waiting.length > 0
  }

  get consumed (): number {
    return this.consumedCount
  }

  /** Moves every waiting message into the history as a user message, in order. */
  drainInto (history: ChatMessage[]): void {
    for (const content of this.waiting.splice(0)) {
      history.push({ role: 'user', content })
      this.consumedCount += 1
    }
  }

  /** The turn is ending: later offers are refused with `STEERING_CLOSED`. */
  close (): void {
    this.closedFlag = true
  }

  get closed (): boolean {
    return this.closedFlag
  }
}
