/**
 * Store seam: sessions (history and `always` grants), turns (status, tool calls, approval
 * audit), the persisted event log, and instance leases. Records are owned by a principal;
 * callers check ownership, the store just keeps them. A session is keyed by its tenant (read
 * from its owner, core/tenancy.ts) and its id: clients choose session ids, and the same id in
 * two tenants is two sessions. One Store object belongs to one gateway
 * instance: turns it saves are stamped with that instance's id, so other instances can tell a
 * live owner from a dead one.
 */
import type { ScheduleBook } from './schedule-book.js'
import type { SpendLedger } from './spend-ledger.js'
import type { Outbox } from './outbox.js'
import type { ChatMessage } from '../providers/types.js'
import type { ApprovalGrant } from '../../schemas/session.js'
import type { Turn } from '../../schemas/turn.js'
import type { BusEnvelope, CheckpointRow } from '../core/envelope.js'

export interface SessionRecord {
  session_id: string
  owner: string
  agent: string
  created_at: string
  updated_at: string
  turn_ids: string[]
  history: ChatMessage[]
  always_allowed: ApprovalGrant[]
}

export interface TurnRecord extends Turn {
  owner: string
  /** Id of the receipt master key this turn's receipts were signed under (never shown to clients). */
  receipt_key_id?: string
}

/** A principal's idempotency key, bound to the turn it started until `expiresMs`. */
export interface IdempotencyClaim {
  owner: string
  key: string
  /** Canonical form of the request body: a repeat with another body is a conflict. */
  fingerprint: string
  expiresMs: number
}

export interface IdempotencyRecord {
  turnId: string
  fingerprint: string
}

/** Keyset position of a listing: the sort time and id of the last item of the previous page. */
export interface PageKey {
  at: string
  id: string
}

/** Descending by time, then id: the order of every listing. */
export function newestFirst (a: PageKey, b: PageKey): number {
  if (a.at !== b.at) return a.at < b.at ? 1 : -1
  return a.id === b.id ? 0 : a.id < b.id ? 1 : -1
}

/** Sorts after every stored item: the SQL stores' "before" for a first page. */
export const FIRST_PAGE: PageKey = { at: '\uffff', id: '\uffff' }

export interface TurnFilter {
  sessionId?: string
  status?: string
}

export interface RunningTurn {
  turnId: string
  /** Instance that saved the turn while it ran; null for records written before leases existed. */
  instanceId: string | null
}

/** A turn's final record and its session's, saved with the turn's last events (see `saveTurnAndSession`). */
export interface FinishedTurn {
  turn: TurnRecord
  session: SessionRecord
}

export interface Store {
  readonly instanceId: string
  /**
   * True when no other process can use this store at the same time (memory; SQLite, whose file
   * is locked): every turn still `running` at start belongs to a dead process.
   */
  readonly exclusive: boolean
  /** True when what it keeps outlives the process (SQLite, PostgreSQL): turns may then resume after a restart. */
  readonly durable: boolean
  /** What each budget has spent (src/store/spend-ledger.ts), shared like the store itself. */
  readonly spend: SpendLedger
  /** Schedules and their runs (src/store/schedule-book.ts), shared like the store itself. */
  readonly schedules: ScheduleBook
  /**
   * Notification deliveries (src/store/outbox.ts): those an event announces are written in the
   * same write as the event, as the planner the store was created with maps it.
   */
  readonly outbox: Outbox
  /** The session `sessionId` of `tenant`, whoever of that tenant owns it. */
  getSession (tenant: string, sessionId: string): Promise<SessionRecord | null>
  saveSession (session: SessionRecord): Promise<void>
  getTurn (turnId: string): Promise<TurnRecord | null>
  /**
   * Inserts or updates. Saves of one turn apply in call order, and a turn already recorded in
   * a terminal status never changes again (the first terminal write wins).
   */
  saveTurn (turn: TurnRecord): Promise<void>
  /**
   * saveTurn and saveSession as one atomic write: both land or neither does, so a reader never
   * sees a turn the session does not list, or a session history ahead of its finished turn.
   * Ordered with the other saves of the same turn and of the same session. `events` (a finished
   * turn's terminal event and those of its events not written yet) are appended to the event log
   * in the same write, as appendEvents would.
   */
  saveTurnAndSession (turn: TurnRecord, session: SessionRecord, events?: readonly BusEnvelope[]): Promise<void>
  /** The owner's sessions, most recently updated first (then by id, descending), after `before`. */
  listSessions (owner: string, limit: number, before?: PageKey): Promise<SessionRecord[]>
  /** The owner's turns matching `filter`, newest first (created_at, then id, descending), after `before`. */
  listTurns (owner: string, filter: TurnFilter, limit: number, before?: PageKey): Promise<TurnRecord[]>
  /**
   * Saves a new turn with its session (as saveTurnAndSession) together with its idempotency
   * claim, atomically: when another turn already holds the unexpired key, nothing is written and
   * that turn's record is answered instead; null means this turn was saved. Two instances racing
   * with one key: exactly one saves its turn. `events` (the turn's `turn.started`, and for a
   * durable turn its first `iteration`) are appended to the event log in the same write, with
   * `checkpoint` (a durable turn's first, at its first model call), and like the turn not at all
   * when the claim is held.
   */
  createTurn (
    turn: TurnRecord, session: SessionRecord, claim: IdempotencyClaim | null, events?: readonly BusEnvelope[],
    checkpoint?: CheckpointRow | null
  ): Promise<IdempotencyRecord | null>
  /** The unexpired turn bound to a principal's idempotency key, if any. */
  getIdempotency (owner: string, key: string): Promise<IdempotencyRecord | null>
  /** Forgets idempotency keys that expired before `nowMs` (lookups ignore them anyway). */
  pruneIdempotency (nowMs: number): Promise<void>
  /**
   * Appends events (any turns, each turn's in seq order); an event already stored is kept.
   * `checkpoints` (durable turns) are written in the same transaction, after the events; a
   * turn's stored checkpoint is replaced by a later one, never by an earlier one.
   */
  appendEvents (events: readonly BusEnvelope[], checkpoints?: readonly CheckpointRow[]): Promise<void>
  /**
   * The same, done before returning, by stores whose writes are synchronous (SQLite): an event
   * is then on disk before any client can see it, so a crash never loses an event a client saw.
   * `finished` turns (record and session) and `records` of running turns (saved as saveTurn
   * would: an approval's wait or decision) are written in the same transaction, after the events.
   */
  appendEventsNow?: (
    events: readonly BusEnvelope[], checkpoints?: readonly CheckpointRow[], finished?: readonly FinishedTurn[],
    records?: readonly TurnRecord[]
  ) => void
  /** The turn's latest checkpoint, if it has one. */
  readCheckpoint (turnId: string): Promise<CheckpointRow | null>
  /** Forgets the checkpoints of turns that are no longer running. */
  pruneCheckpoints (): Promise<void>
  /**
   * Stored events of a turn after `afterSeq`, ascending, at most `limit`: exactly the envelopes
   * appended, however they are kept (the SQL stores keep runs of deltas as one row, compacted when
   * the turn finishes: delta-runs.ts), `afterSeq` inside such a run included.
   */
  readEvents (turnId: string, afterSeq: number, limit: number): Promise<BusEnvelope[]>
  lastEventSeq (turnId: string): Promise<number>
  /** Deletes the events of turns that finished before `finishedBeforeMs`, and long-expired leases. */
  prune (finishedBeforeMs: number): Promise<void>
  /** Records that this instance is alive for `ttlMs` more. */
  renewLease (ttlMs: number): Promise<void>
  releaseLease (): Promise<void>
  /** Instances whose lease has not expired (this one included once it renewed). */
  liveInstances (): Promise<string[]>
  /** Ids only: every instance sweeps this list often, records are read for orphans alone. */
  runningTurns (): Promise<RunningTurn[]>
  /**
   * Writes `turn` (a terminal record) only if the stored turn is still running under
   * `instanceId`; answers whether it did. Two instances recovering one turn: exactly one wins.
   */
  interruptTurn (turn: TurnRecord, instanceId: string | null): Promise<boolean>
  /**
   * Takes a running turn over from `instanceId` (a dead instance, or a previous incarnation) so
   * this instance can resume it: only if it is still running under that instance. Two instances
   * racing for one turn: exactly one wins.
   */
  adoptTurn (turnId: string, instanceId: string | null): Promise<boolean>
  close (): Promise<void>
}

export const TERMINAL_TURN_STATUSES: ReadonlySet<string> = new Set(['completed', 'cancelled', 'failed', 'interrupted'])
