/**
 * Live client connections of this process (WebSocket sockets and SSE/long-poll requests):
 * who they belong to, what they watch, and callbacks to run when they go away. Ownership and
 * approval routing ask this registry; nothing else tracks sockets.
 */
import { randomUUID } from 'node:crypto'

export type ConnectionKind = 'ws' | 'sse' | 'http'

export interface Connection {
  readonly id: string
  readonly kind: ConnectionKind
  readonly principal: string
  /** Whether the principal behind it may answer approvals (scope `approvals:answer`). */
  readonly canAnswer: boolean
  /**
   * Whether it may become a turn's owner when the owner went away (a WebSocket following the
   * turn). A GET events stream never owns: dropping it must never cancel anything.
   */
  readonly canOwn: boolean
  readonly turns: Set<string>
  readonly sessions: Set<string>
  closed: boolean
  /** Set by transports that can stream: follow a turn this connection now owns, from before its first event. */
  follow?: (turnId: string) => void
}

export class ConnectionRegistry {
  private readonly connections = new Map<string, Connection>()
  private readonly closeListeners = new Map<string, Set<() => void>>()

  open (kind: ConnectionKind, principal: string, canAnswer: boolean, canOwn = true): Connection {
    const connection: Connection = {
      id: `${kind}_${randomUUID()}`, kind, principal, canAnswer, canOwn, turns: new Set(), sessions: new Set(), closed: false
    }
    this.connections.set(connection.id, connection)
    return connection
  }

  get (id: string): Connection | undefined {
    return this.connections.get(id)
  }

  /** Runs `listener` once when the connection closes (immediately if it is already gone). */
  onClose (id: string, listener: () => void): () => void {
    const connection = this.connections.get(id)
    if (connection === undefined || connection.closed) {
      listener()
      return () => {}
    }
    let set = this.closeListeners.get(id)
    if (set === undefined) {
      set = new Set()
      this.closeListeners.set(id, set)
    }
    set.add(listener)
    return () => { this.closeListeners.get(id)?.delete(listener) }
  }

  close (id: string): void {
    const connection = this.connections.get(id)
    if (connection === undefined) return
    connection.closed = true
    this.connections.delete(id)
    const listeners = this.closeListeners.get(id)
    this.closeListeners.delete(id)
    for (const listener of listeners ?? []) listener()
  }

  /**
   * True when a live streaming connection of `principal` that may answer approvals watches the
   * turn or its session, i.e. someone can act on an approval request. A long-poll (`?wait=true`)
   * sees nothing until the end.
   */
  watchedBy (principal: string, turnId: string, sessionId: string): boolean {
    for (const c of this.connections.values()) {
      if (c.kind === 'http' || c.closed || !c.canAnswer || c.principal !== principal) continue
      if (c.turns.has(turnId) || c.sessions.has(sessionId)) return true
    }
    return false
  }

  /**
   * A live streaming connection of `principal` that follows the turn itself (not only its
   * session); one that can own the turn is preferred.
   */
  follower (principal: string, turnId: string): Connection | undefined {
    let watcher: Connection | undefined
    for (const c of this.connections.values()) {
      if (c.kind === 'http' || c.closed || c.principal !== principal || !c.turns.has(turnId)) continue
      if (c.canOwn) return c
      watcher ??= c
    }
    return watcher
  }

  count (kind?: ConnectionKind): number {
    if (kind === undefined) return this.connections.size
    let n = 0
    for (const c of this.connections.values()) if (c.kind === kind) n++
    return n
  }

  all (): Connection[] {
    return [...this.connections.values()]
  }
}
