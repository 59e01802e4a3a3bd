/**
 * Who owns a running turn: the connection whose closing cancels it (after the disconnect grace,
 * within which a streaming connection of the same principal that follows the turn takes it over),
 * or none (a detached turn, or one resumed after a restart). The one place these fields change:
 * at the start, on a hand-over (`TurnService.setOwner`), after a restart, and when the grace
 * passes.
 */
import { TERMINAL_TURN_STATUSES, type TurnRecord } from '../store/store.js'
import type { ConnectionRegistry } from './connections.js'

/** What ownership needs from the service: the connections, and timers it clears at shutdown. */
export interface OwnershipHost {
  connections: ConnectionRegistry
  later (ms: number, fn: () => void): NodeJS.Timeout
  clear (timer: NodeJS.Timeout): void
}

/** The turn owned: its record (owner principal, id, status) and how to cancel it. */
export interface OwnedTurn {
  readonly record: TurnRecord
  /** `turns.disconnect_grace_ms`: 0 cancels at once when the owner connection closes. */
  readonly graceMs: number
  cancel (reason: string): void
}

export class TurnOwnership {
  private owner: string | null
  private detachedFlag: boolean
  /** The close listener of the current owner connection (one at a time: a hand-over replaces it). */
  private stopListening: (() => void) | null = null
  /** Grace timers under way. */
  private readonly timers = new Set<NodeJS.Timeout>()

  constructor (
    private readonly host: OwnershipHost,
    private readonly turn: OwnedTurn,
    owner: string | null,
    detached: boolean
  ) {
    this.owner = owner
    this.detachedFlag = detached
  }

  /** The owner connection's id; null: nobody owns the turn. */
  get connection (): string | null {
    return this.owner
  }

  /** Survives its owner connection closing: set on start, or when a never-owning stream resumed it. */
  get detached (): boolean {
    return this.detachedFlag
  }

  /** Closing the owner connection cancels the turn, after the disconnect grace, unless detached. */
  bind (): void {
    this.stopListening?.()
    this.stopListening = null
    const id = this.owner
    if (id === null) return
    this.stopListening = this.host.connections.onClose(id, () => { this.ownerClosed(id) })
  }

  /**
   * Hands the turn to another live connection of its principal, or to none (it then runs on as if
   * detached); the connection it leaves no longer cancels it.
   */
  handOver (connectionId: string | null): void {
    this.owner = connectionId
    this.bind()
  }

  /**
   * A turn resumed after a restart: its owner connection died with the old process, so it runs
   * detached; if it had an owner, a streaming connection of the owner that follows it within the
   * disconnect grace becomes its owner again (with the usual cancel-on-close).
   */
  ownAfterRestart (hadOwner: boolean): void {
    this.owner = null
    this.detachedFlag = true
    if (!hadOwner || this.turn.graceMs === 0) return
    this.afterGrace(() => {
      const successor = this.successor()
      if (successor === undefined || !successor.canOwn || this.ended()) return
      this.owner = successor.id
      this.detachedFlag = false
      this.bind()
    })
  }

  /** The turn ended or parked: its owner binding and grace timers go. */
  dispose (): void {
    this.stopListening?.()
    this.stopListening = null
    for (const timer of this.timers) this.host.clear(timer)
    this.timers.clear()
  }

  private ownerClosed (id: string): void {
    // A connection that handed the turn over no longer cancels it.
    if (this.owner !== id || this.detachedFlag || this.ended()) return
    if (this.turn.graceMs === 0) {
      this.turn.cancel('owner connection closed')
      return
    }
    // The grace exists so a client can reconnect and resume: if the owner principal follows the
    // turn again from a streaming connection by then, that connection becomes the owner.
    this.afterGrace(() => {
      if (this.ended()) return
      const successor = this.successor()
      if (successor === undefined) {
        this.turn.cancel('owner connection closed')
        return
      }
      if (!successor.canOwn) {
        // Resumed over a GET events stream, which never owns: the turn runs on without an owner.
        this.owner = null
        this.detachedFlag = true
        return
      }
      this.owner = successor.id
      this.bind()
    })
  }

  private afterGrace (fn: () => void): void {
    const timer = this.host.later(this.turn.graceMs, () => {
      this.timers.delete(timer)
      fn()
    })
    this.timers.add(timer)
  }

  private successor (): ReturnType<ConnectionRegistry['follower']> {
    return this.host.connections.follower(this.turn.record.owner, this.turn.record.turn_id)
  }

  private ended (): boolean {
    return TERMINAL_TURN_STATUSES.has(this.turn.record.status)
  }
}
