/**
 * The principal's listings: pending approvals, sessions and turns, newest first, keyset-paged.
 * The store holds every instance's records; a turn running here has a fresher record in memory
 * than its last save, so that one is shown instead.
 */
import { DEFAULT_PAGE_LIMIT, type PendingApproval } from '../../schemas/approval.js'
import type { SessionSummary } from '../../schemas/session.js'
import type { TurnsQuery, TurnSummary } from '../../schemas/turn.js'
import { principalKey, type Principal } from '../auth/principal.js'
import type { PageKey, SessionRecord, Store, TurnFilter } from '../store/store.js'
import { decodeCursor, newestFirst, pageOf } from './pages.js'
import type { RunningTurn } from './running-turn.js'

/** Bound on the running turns one principal's approval listing reads (max_active_turns_per_principal per instance). */
const MAX_RUNNING_SCAN = 1000

export interface Page<T> {
  items: T[]
  next_cursor: string | null
}

export class TurnListing {
  constructor (
    private readonly store: Store,
    /** The turns running on this instance, by id. */
    private readonly active: ReadonlyMap<string, RunningTurn>,
    /** Resolves once the events appended so far are stored (TurnJournal.written). */
    private readonly written: () => Promise<void>
  ) {}

  async pendingApprovals (
    principal: Principal, query: { sessionId?: string, turnId?: string, limit: number, cursor?: string }
  ): Promise<Page<PendingApproval>> {
    const owner = principalKey(principal)
    const before = decodeCursor(query.cursor)
    // A running turn's record lists a request as soon as it is asked, in the tick its events are
    // appended; they are stored at the end of that tick. Listed only once they are: a crash
    // between the two would otherwise take back a request someone was shown (after the restart
    // the turn asks its model again, and the request shown never comes back).
    await this.written()
    const byTurn = new Map<string, PendingApproval[]>()
    const filter = query.sessionId === undefined ? { status: 'running' } : { status: 'running', sessionId: query.sessionId }
    for (const t of await this.store.listTurns(owner, filter, MAX_RUNNING_SCAN)) byTurn.set(t.turn_id, t.pending_approvals)
    for (const running of this.active.values()) {
      const r = running.record
      if (r.owner !== owner || (query.sessionId !== undefined && r.session_id !== query.sessionId)) continue
      byTurn.set(r.turn_id, r.pending_approvals)
    }
    const keyOf = (p: PendingApproval): PageKey => ({ at: p.requested_at, id: p.request_id })
    const all = [...byTurn.values()].flat()
      .filter((p) => query.turnId === undefined || p.turn_id === query.turnId)
      .filter((p) => before === undefined || newestFirst(keyOf(p), before) > 0)
      .sort((a, b) => newestFirst(keyOf(a), keyOf(b)))
    return pageOf(all.slice(0, query.limit + 1), query.limit, keyOf)
  }

  /** The principal's sessions, most recently updated first, each with its running turn if any. */
  async sessions (principal: Principal, query: { limit: number, cursor?: string }): Promise<Page<SessionSummary>> {
    const fetched = await this.store.listSessions(principalKey(principal), query.limit + 1, decodeCursor(query.cursor))
    const page = pageOf(fetched, query.limit, (s) => ({ at: s.updated_at, id: s.session_id }))
    const items = await Promise.all(page.items.map(async (s): Promise<SessionSummary> => ({
      session_id: s.session_id,
      agent: s.agent,
      created_at: s.created_at,
      updated_at: s.updated_at,
      active_turn_id: await this.activeTurnOf(s)
    })))
    return { items, next_cursor: page.next_cursor }
  }

  private async activeTurnOf (session: SessionRecord): Promise<string | null> {
    for (const { record } of this.active.values()) {
      // The same id in another tenant is another session.
      if (record.session_id === session.session_id && record.owner === session.owner) return record.turn_id
    }
    // Only a session's latest turn can be running (one at a time), maybe on another instance.
    const latest = session.turn_ids.at(-1)
    if (latest === undefined) return null
    return (await this.store.getTurn(latest))?.status === 'running' ? latest : null
  }

  /** The principal's turns, newest first, optionally of one session and/or in one status. */
  async turns (principal: Principal, query: TurnsQuery): Promise<Page<TurnSummary>> {
    const filter: TurnFilter = {}
    if (query.session_id !== undefined) filter.sessionId = query.session_id
    if (query.status !== undefined) filter.status = query.status
    const limit = query.limit ?? DEFAULT_PAGE_LIMIT
    const fetched = await this.store.listTurns(principalKey(principal), filter, limit + 1, decodeCursor(query.cursor))
    const page = pageOf(fetched, limit, (t) => ({ at: t.created_at, id: t.turn_id }))
    return {
      items: page.items.map((stored) => {
        const t = this.active.get(stored.turn_id)?.record ?? stored
        const { turn_id: turnId, session_id: sessionId, agent, status, created_at: createdAt, updated_at: updatedAt } = t
        return { turn_id: turnId, session_id: sessionId, agent, status, created_at: createdAt, updated_at: updatedAt }
      }),
      next_cursor: page.next_cursor
    }
  }
}
