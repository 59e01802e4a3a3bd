/**
 * In-memory store: nothing survives the process (tests, throwaway runs). Records are kept as
 * their JSON text, through the SQL stores' codec: immutable, so callers can never mutate stored
 * state by accident, cheaper than a structured clone on the way in, and a value that would not
 * survive the SQL stores does not survive this one either. It is exclusive by nature: its only
 * instance is the process that holds it.
 */
import { MemorySpendLedger } from './spend-ledger.js'
import { MemoryScheduleBook } from './schedule-book.js'
import { MemoryOutbox } from './outbox-memory.js'
import type { BusEnvelope, CheckpointRow } from '../core/envelope.js'
import { sessionKey, tenantOf } from '../core/tenancy.js'
import { decodeEnvelope, decodeSession, decodeTurn, encodeDoc, finishedMs } from './codec.js'
import {
  newestFirst, TERMINAL_TURN_STATUSES, type IdempotencyClaim, type IdempotencyRecord, type PageKey, type RunningTurn,
  type SessionRecord, type Store, type TurnFilter, type TurnRecord
} from './store.js'

/** One page of a listing in the SQL stores' order (time, then id, descending), decoded. */
function page<T> (items: Array<{ key: PageKey, doc: string }>, decode: (doc: string) => T, limit: number, before?: PageKey): T[] {
  return items
    .filter((i) => before === undefined || newestFirst(i.key, before) > 0)
    .sort((a, b) => newestFirst(a.key, b.key))
    .slice(0, limit)
    .map((i) => decode(i.doc))
}

/** A stored session: its document, and the columns its listing filters and orders by. */
interface StoredSession {
  sessionId: string
  owner: string
  updatedAt: string
  doc: string
}

interface StoredTurn {
  turnId: string
  owner: string
  sessionId: string
  status: TurnRecord['status']
  createdAt: string
  doc: string
  instanceId: string
  finishedAt: number | null
}

export class MemoryStore implements Store {
  readonly instanceId: string
  readonly exclusive = true
  readonly durable = false
  readonly spend = new MemorySpendLedger()
  readonly schedules = new MemoryScheduleBook()
  readonly outbox = new MemoryOutbox()
  /** By sessionKey(tenant, session id). */
  private readonly sessions = new Map<string, StoredSession>()
  private readonly turns = new Map<string, StoredTurn>()
  /** Per turn: seq → the envelope's JSON text. */
  private readonly events = new Map<string, Map<number, string>>()
  private readonly checkpoints = new Map<string, CheckpointRow>()
  private readonly idempotency = new Map<string, IdempotencyRecord & { expiresMs: number }>()
  private leaseExpires = 0

  constructor (options: { instanceId?: string } = {}) {
    this.instanceId = options.instanceId ?? 'local'
  }

  async getSession (tenant: string, sessionId: string): Promise<SessionRecord | null> {
    const s = this.sessions.get(sessionKey(tenant, sessionId))
    return s === undefined ? null : decodeSession(s.doc)
  }

  async saveSession (session: SessionRecord): Promise<void> {
    this.putSession(session)
  }

  private putSession (session: SessionRecord): void {
    this.sessions.set(sessionKey(tenantOf(session.owner), session.session_id), {
      sessionId: session.session_id, owner: session.owner, updatedAt: session.updated_at, doc: encodeDoc(session)
    })
  }

  async getTurn (turnId: string): Promise<TurnRecord | null> {
    const t = this.turns.get(turnId)
    return t === undefined ? null : decodeTurn(t.doc)
  }

  async saveTurn (turn: TurnRecord): Promise<void> {
    this.putTurn(turn)
  }

  private putTurn (turn: TurnRecord): void {
    const stored = this.turns.get(turn.turn_id)
    if (stored !== undefined && TERMINAL_TURN_STATUSES.has(stored.status)) return
    this.turns.set(turn.turn_id, storedTurn(turn, stored?.instanceId ?? this.instanceId))
  }

  async saveTurnAndSession (turn: TurnRecord, session: SessionRecord, events: readonly BusEnvelope[] = []): Promise<void> {
    this.putTurn(turn)
    this.putSession(session)
    this.putEvents(events)
  }

  async listSessions (owner: string, limit: number, before?: PageKey): Promise<SessionRecord[]> {
    const mine = [...this.sessions.values()].filter((x) => x.owner === owner)
      .map((x) => ({ key: { at: x.updatedAt, id: x.sessionId }, doc: x.doc }))
    return page(mine, decodeSession, limit, before)
  }

  async listTurns (owner: string, filter: TurnFilter, limit: number, before?: PageKey): Promise<TurnRecord[]> {
    const mine = [...this.turns]
      .filter(([, t]) => t.owner === owner && (filter.sessionId === undefined || t.sessionId === filter.sessionId) &&
        (filter.status === undefined || t.status === filter.status))
      .map(([id, t]) => ({ key: { at: t.createdAt, id }, doc: t.doc }))
    return page(mine, decodeTurn, limit, before)
  }

  async createTurn (
    turn: TurnRecord, session: SessionRecord, claim: IdempotencyClaim | null, events: readonly BusEnvelope[] = [],
    checkpoint: CheckpointRow | null = null
  ): Promise<IdempotencyRecord | null> {
    if (claim !== null) {
      const taken = this.liveClaim(claim.owner, claim.key)
      if (taken !== null) return taken
      const held = { turnId: turn.turn_id, fingerprint: claim.fingerprint, expiresMs: claim.expiresMs }
      this.idempotency.set(idempotencyId(claim.owner, claim.key), held)
    }
    await this.saveTurnAndSession(turn, session, events)
    if (checkpoint !== null) await this.appendEvents([], [checkpoint])
    return null
  }

  async getIdempotency (owner: string, key: string): Promise<IdempotencyRecord | null> {
    return this.liveClaim(owner, key)
  }

  private liveClaim (owner: string, key: string): IdempotencyRecord | null {
    const held = this.idempotency.get(idempotencyId(owner, key))
    return held === undefined || held.expiresMs <= Date.now() ? null : { turnId: held.turnId, fingerprint: held.fingerprint }
  }

  async pruneIdempotency (nowMs: number): Promise<void> {
    for (const [id, held] of this.idempotency) if (held.expiresMs <= nowMs) this.idempotency.delete(id)
  }

  async appendEvents (events: readonly BusEnvelope[], checkpoints: readonly CheckpointRow[] = []): Promise<void> {
    this.putEvents(events)
    for (const c of checkpoints) {
      if ((this.checkpoints.get(c.turn_id)?.seq ?? -1) <= c.seq) this.checkpoints.set(c.turn_id, { ...c })
    }
  }

  private putEvents (events: readonly BusEnvelope[]): void {
    for (const e of events) {
      let log = this.events.get(e.turn_id)
      if (log === undefined) {
        log = new Map()
        this.events.set(e.turn_id, log)
      }
      if (!log.has(e.seq)) log.set(e.seq, encodeDoc(e))
    }
  }

  async readCheckpoint (turnId: string): Promise<CheckpointRow | null> {
    const row = this.checkpoints.get(turnId)
    return row === undefined ? null : { ...row }
  }

  async pruneCheckpoints (): Promise<void> {
    for (const turnId of this.checkpoints.keys()) {
      if (this.turns.get(turnId)?.status !== 'running') this.checkpoints.delete(turnId)
    }
  }

  async readEvents (turnId: string, afterSeq: number, limit: number): Promise<BusEnvelope[]> {
    const log = this.events.get(turnId)
    if (log === undefined) return []
    return [...log.keys()].filter((seq) => seq > afterSeq).sort((a, b) => a - b).slice(0, limit)
      .map((seq) => decodeEnvelope(log.get(seq) as string))
  }

  async lastEventSeq (turnId: string): Promise<number> {
    let max = 0
    for (const seq of this.events.get(turnId)?.keys() ?? []) max = Math.max(max, seq)
    return max
  }

  async prune (finishedBeforeMs: number): Promise<void> {
    for (const [turnId, stored] of this.turns) {
      if (stored.finishedAt !== null && stored.finishedAt < finishedBeforeMs) this.events.delete(turnId)
    }
  }

  async renewLease (ttlMs: number): Promise<void> {
    this.leaseExpires = Date.now() + ttlMs
  }

  async releaseLease (): Promise<void> {
    this.leaseExpires = 0
  }

  async liveInstances (): Promise<string[]> {
    return this.leaseExpires > Date.now() ? [this.instanceId] : []
  }

  async runningTurns (): Promise<RunningTurn[]> {
    return [...this.turns.values()]
      .filter((t) => t.status === 'running')
      .map((t) => ({ turnId: t.turnId, instanceId: t.instanceId }))
  }

  async interruptTurn (turn: TurnRecord, instanceId: string | null): Promise<boolean> {
    const stored = this.turns.get(turn.turn_id)
    if (stored === undefined || stored.status !== 'running' || stored.instanceId !== instanceId) return false
    this.turns.set(turn.turn_id, storedTurn(turn, stored.instanceId))
    return true
  }

  async adoptTurn (turnId: string, instanceId: string | null): Promise<boolean> {
    const stored = this.turns.get(turnId)
    if (stored === undefined || stored.status !== 'running' || stored.instanceId !== instanceId) return false
    stored.instanceId = this.instanceId
    return true
  }

  async close (): Promise<void> {
    this.checkpoints.clear()
    this.sessions.clear()
    this.turns.clear()
    this.events.clear()
    this.idempotency.clear()
  }
}

function storedTurn (turn: TurnRecord, instanceId: string): StoredTurn {
  return {
    turnId: turn.turn_id,
    owner: turn.owner,
    sessionId: turn.session_id,
    status: turn.status,
    createdAt: turn.created_at,
    doc: encodeDoc(turn),
    instanceId,
    finishedAt: finishedMs(turn)
  }
}

function idempotencyId (owner: string, key: string): string {
  return `${owner}\u0000${key}`
}
