/**
 * The delta log: where the SQLite store appends a running turn's streamed text, until the turn is
 * compacted (decision 0279). `tollgate_events` is keyed by (turn, seq), so a commit holding one
 * delta row for each of N streams in flight writes N leaf pages to the WAL, however small the
 * rows; `tollgate_delta_log` is keyed by an ever-growing rowid, so the same commit appends to
 * one or two pages. Only a turn's second delta row and later ones land here, written by the hot
 * path (the journal's group write; a retried or backlogged write goes keyed, so a turn that
 * finished meanwhile never gets rows here again): a turn that streams one piece (a short
 * answer, a model that does not stream) never touches the log, and the turn's compaction has
 * nothing more to move.
 *
 * Which log rows a turn has (rowid, first and last seq) is kept in memory: one process owns the
 * file (sqlite.ts), so nothing else writes it, and reads of a running or not yet compacted turn
 * go to those rows by rowid. Compaction takes a finished turn's log rows into its runs, and the
 * log is cut from its start up to the oldest row a turn still needs (`trim`): one range delete
 * frees whole pages, where deleting each compacted turn's rows would rewrite every page its rows
 * share with the other streams'. A turn that holds the log's start for long (it waits for an
 * approval between two model calls) has its rows copied keyed instead, so that the log does not
 * grow behind it (PIN_ROWS).
 *
 * At open, the rows a crash left of turns still running or queued for compaction are folded
 * into `tollgate_events` as they are (they read back the same there), the rest (compacted
 * turns' rows not cut yet) dropped; a graceful stop does the same for turns still running
 * (parked for a restart).
 *
 * The memory follows the transaction: changes made in one are undone if it rolls back
 * (`discard`), kept once it committed (`settle`).
 */
import type Database from 'better-sqlite3'
import type { BusEnvelope } from '../core/envelope.js'
import { toRows, type RowOfEvents, type StoredRow } from './delta-runs.js'
import { packDoc, unpackDoc } from './doc-pack.js'

// Ids are given by this process, one past the last it gave (`DeltaLog.lastId`), never by SQLite:
// its max(rowid) + 1 would start again from 1 once the log was cut empty, and a row remembered
// for one turn must never be another's. The log is emptied at every open (`fold`), so a new
// process counting from 1 again meets no id anything remembers. (Before schema 8 the table was
// AUTOINCREMENT, which rewrote its counter row, one more page, in every commit that appended.)
export const DELTA_LOG_TABLE = `CREATE TABLE IF NOT EXISTS tollgate_delta_log (
  id INTEGER PRIMARY KEY,
  turn_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  doc NOT NULL
);`

/** Rows the log may hold behind the oldest one a turn still needs before that turn's rows are copied keyed. */
export const PIN_ROWS = 20_000

/**
 * Rows one cut deletes at most (about 1 ms here): the streams of a batch interleave their rows,
 * so the log's start is held until the batch's last turn is compacted, and one delete of all
 * their rows (20,000 for 100 answers of 200 pieces) held the event loop 12–15 ms.
 */
export const CUT_ROWS = 2048

/**
 * One row of the log, as remembered: with the envelopes it holds, the same objects that were
 * published (a running turn's bus ring holds them too), so that compaction reads none of the
 * turn's log rows back from the file.
 */
interface Entry { id: number, seq: number, last: number, events: readonly BusEnvelope[] }

/** A turn with a delta row stored: the log rows after it, and the last seq of any of its delta rows. */
interface Tail { entries: Entry[], lastSeq: number }

export class DeltaLog {
  private readonly tails = new Map<string, Tail>()
  /** Undoes this transaction's changes to `tails` (run in reverse) if it rolls back. */
  private undo: Array<() => void> = []
  private readonly insert: Database.Statement<[number, string, number, number, string | Buffer]>
  private readonly readRow: Database.Statement<[number], { doc: string | Buffer }>
  private readonly copyKeyed: Database.Statement<[number]>
  private readonly cut: Database.Statement<[number]>
  /** The last rowid appended; rows below `start` are cut. */
  private lastId = 0
  private start = 0

  constructor (
    private readonly db: Database.Database,
    private readonly announce: ((event: BusEnvelope) => void) | null,
    private readonly pinRows = PIN_ROWS,
    private readonly cutRows = CUT_ROWS
  ) {
    this.insert = db.prepare('INSERT INTO tollgate_delta_log (id, turn_id, seq, last_seq, doc) VALUES (?, ?, ?, ?, ?)')
    this.readRow = db.prepare('SELECT doc FROM tollgate_delta_log WHERE id = ?')
    this.copyKeyed = db.prepare(`INSERT OR IGNORE INTO tollgate_events (turn_id, seq, last_seq, doc)
      SELECT turn_id, seq, last_seq, doc FROM tollgate_delta_log WHERE id = ?`)
    this.cut = db.prepare('DELETE FROM tollgate_delta_log WHERE id < ?')
  }

  /**
   * Takes a delta row (in the caller's transaction) when its turn has a delta row stored keyed
   * in this process (`opened`): returns whether it did. Pieces stored already (a group written
   * again) are not written twice; the rest of the row is.
   */
  append (row: RowOfEvents): boolean {
    const tail = this.tails.get(row.turn_id)
    if (tail === undefined) return false
    if (row.seq <= tail.lastSeq) {
      for (const rest of toRows(row.events.filter((e) => e.seq > tail.lastSeq))) this.put(tail, rest)
      return true
    }
    this.put(tail, row)
    return true
  }

  /** The turn's first delta row was stored keyed, up to `lastSeq` (in the caller's transaction): its later ones come here. */
  opened (turnId: string, lastSeq: number): void {
    if (this.tails.has(turnId)) return
    this.tails.set(turnId, { entries: [], lastSeq })
    this.undo.push(() => { this.tails.delete(turnId) })
  }

  private put (tail: Tail, row: RowOfEvents): void {
    const last = row.last_seq ?? row.seq
    const id = this.lastId + 1
    this.insert.run(id, row.turn_id, row.seq, last, packDoc(row.doc))
    const before = tail.lastSeq
    const lastId = this.lastId
    tail.entries.push({ id, seq: row.seq, last, events: row.events })
    tail.lastSeq = Math.max(before, last)
    this.lastId = id
    this.undo.push(() => {
      tail.entries.pop()
      tail.lastSeq = before
      this.lastId = lastId
    })
    if (this.announce !== null) for (const e of row.events) this.announce(e)
  }

  /** The transaction that appended committed. */
  settle (): void {
    if (this.undo.length > 0) this.undo = []
  }

  /** The transaction that appended rolled back: its rows are not in the file. */
  discard (): void {
    for (let i = this.undo.length - 1; i >= 0; i--) this.undo[i]?.()
    this.undo = []
  }

  /** Whether the turn has rows in the log. */
  holds (turnId: string): boolean {
    return (this.tails.get(turnId)?.entries.length ?? 0) > 0
  }

  /** The last seq of the turn's delta rows (0 when none is known here). */
  lastSeq (turnId: string): number {
    return this.tails.get(turnId)?.lastSeq ?? 0
  }

  /** The turn's log rows holding events after `afterSeq`, in seq order, `limit` at most. */
  rows (turnId: string, afterSeq: number, limit: number): StoredRow[] {
    const out: StoredRow[] = []
    for (const entry of this.tails.get(turnId)?.entries ?? []) {
      if (out.length >= limit) break
      if (entry.last <= afterSeq) continue
      const row = this.readRow.get(entry.id)
      // Gone only if retention pruned the finished turn's rows (which makes the log forget it) meanwhile.
      if (row !== undefined) out.push({ seq: entry.seq, last_seq: entry.last, doc: unpackDoc(row.doc) })
    }
    return out
  }

  /**
   * The envelopes of the turn's log rows, in seq order, as they were appended: what reading the
   * rows back would give (delta-runs.ts restores every row exactly), without the reads and parses.
   */
  events (turnId: string): BusEnvelope[] {
    const out: BusEnvelope[] = []
    for (const entry of this.tails.get(turnId)?.entries ?? []) for (const e of entry.events) out.push(e)
    return out
  }

  /** The turn needs no rows here any more: compacted (in the caller's transaction), finished with none, or pruned. */
  forget (turnId: string): void {
    const tail = this.tails.get(turnId)
    if (tail === undefined) return
    this.tails.delete(turnId)
    if (this.db.inTransaction) this.undo.push(() => { this.tails.set(turnId, tail) })
  }

  /**
   * Cuts the log towards the oldest row a turn still needs, `cutRows` (CUT_ROWS) rows at most (in
   * the caller's transaction); returns whether rows are left to cut. A turn whose rows are
   * `pinRows` (PIN_ROWS) or more behind the last one has them copied keyed first: it needs them
   * here no more.
   */
  trim (): boolean {
    let oldest = this.oldest()
    while (oldest !== null && this.lastId - (oldest.entries[0]?.id ?? this.lastId) >= this.pinRows) {
      const { entries } = oldest
      for (const entry of entries) this.copyKeyed.run(entry.id)
      const tail = oldest
      tail.entries = []
      this.undo.push(() => { tail.entries = entries })
      oldest = this.oldest()
    }
    const floor = oldest?.entries[0]?.id ?? this.lastId + 1
    if (floor <= this.start) return false
    // Ids are given one by one and every row below `start` is gone: this deletes `cutRows` at most.
    const to = Math.min(floor, this.start + this.cutRows)
    this.cut.run(to)
    const start = this.start
    this.start = to
    this.undo.push(() => { this.start = start })
    return to < floor
  }

  /** The tail holding the oldest row. */
  private oldest (): Tail | null {
    let found: Tail | null = null
    for (const tail of this.tails.values()) {
      const first = tail.entries[0]
      if (first !== undefined && (found === null || first.id < (found.entries[0] as Entry).id)) found = tail
    }
    return found
  }

  /**
   * Empties the log, its rows of turns still running or queued for compaction moved keyed as they
   * are, and forgets all (at open, and at a graceful stop). One transaction. A compacted turn's
   * rows (not cut yet) are dropped: its runs hold them.
   */
  fold (): void {
    this.tails.clear()
    this.undo = []
    this.lastId = 0
    this.start = 0
    if (this.db.prepare('SELECT 1 FROM tollgate_delta_log LIMIT 1').get() === undefined) return
    this.db.transaction(() => {
      this.db.exec(`INSERT OR IGNORE INTO tollgate_events (turn_id, seq, last_seq, doc)
        SELECT turn_id, seq, last_seq, doc FROM tollgate_delta_log
        WHERE turn_id IN (SELECT turn_id FROM tollgate_turns WHERE status = 'running')
          OR turn_id IN (SELECT turn_id FROM tollgate_compactions)
        ORDER BY id`)
      this.db.exec('DELETE FROM tollgate_delta_log')
    })()
  }
}
