/**
 * Delta runs: how the SQL stores keep a turn's streamed text. A turn streams its answer (and its
 * reasoning) as one `text.delta` (`reasoning.delta`) event per piece, each a few characters in an
 * envelope of a few hundred bytes. Consecutive pieces of one kind (consecutive seqs of one turn)
 * are stored as ONE row, a delta run: keyed by its first seq, with its last seq beside it, the
 * shared envelope fields once, each piece's text and its ts as milliseconds after the previous
 * piece's. Expanding a run gives back the exact envelopes that were published (deep-equal, same
 * key order). Every other event is a row of its own, its document the envelope as it was.
 *
 * A piece joins a run only when the run restores it exactly: an envelope with the usual fields
 * and nothing else, and a ts in the form `new Date().toISOString()` writes (which the turn's
 * `sequence` stamps). Anything else is stored as it is.
 */
import type { BusEnvelope } from '../core/envelope.js'
import { decodeEnvelope, encodeDoc } from './codec.js'

/** Pieces per run at most: a row containing seq `n` starts after `n - MAX_RUN`, so reads stay on the key. */
export const MAX_RUN = 1024

export type DeltaKind = 'text.delta' | 'reasoning.delta'

/** One row of the event log. `last_seq`: a delta row's last seq (its own for a single piece); null for any other event. */
export interface EventRow {
  turn_id: string
  seq: number
  last_seq: number | null
  doc: string
}

/** A row as read back. */
export type StoredRow = Pick<EventRow, 'seq' | 'last_seq' | 'doc'>

/** A row to write, with the envelopes it holds (what the outbox planner is told of). */
export interface RowOfEvents extends EventRow {
  events: readonly BusEnvelope[]
}

/** The document of a run of two pieces or more. */
interface RunDoc {
  run: DeltaKind
  turn_id: string
  session_id: string
  tenant: string
  /** The first piece's ts. */
  ts: string
  /** Each later piece's ts, in ms after the previous piece's. */
  dt: number[]
  texts: string[]
}

const ENVELOPE_KEYS = ['turn_id', 'session_id', 'tenant', 'seq', 'ts', 'event']
const EVENT_KEYS = ['kind', 'text']

/** `o`'s own keys are exactly `keys`, in that order (checked per delta: no array or string built). */
function keysAre (o: object, keys: readonly string[]): boolean {
  let i = 0
  for (const k in o) if (k !== keys[i++]) return false
  return i === keys.length
}

function deltaKind (e: BusEnvelope): DeltaKind | null {
  return e.event.kind === 'text.delta' || e.event.kind === 'reasoning.delta' ? e.event.kind : null
}

/** Its ts as epoch ms when a run can restore this envelope exactly; null otherwise. */
function runnable (e: BusEnvelope): number | null {
  if (deltaKind(e) === null) return null
  if (!keysAre(e, ENVELOPE_KEYS) || !keysAre(e.event, EVENT_KEYS)) return null
  const ms = Date.parse(e.ts)
  return Number.isFinite(ms) && new Date(ms).toISOString() === e.ts ? ms : null
}

/** A piece may follow `last` in its run: same turn, next seq, same kind and shared fields. */
function continues (last: BusEnvelope, e: BusEnvelope): boolean {
  return e.seq === last.seq + 1 && e.event.kind === last.event.kind && e.session_id === last.session_id && e.tenant === last.tenant
}

function runRow (pieces: readonly BusEnvelope[]): RowOfEvents {
  const first = pieces[0] as BusEnvelope
  const last = pieces[pieces.length - 1] as BusEnvelope
  if (pieces.length === 1) return { turn_id: first.turn_id, seq: first.seq, last_seq: first.seq, doc: encodeDoc(first), events: pieces }
  const dt: number[] = []
  const texts: string[] = []
  let previous = Date.parse(first.ts)
  for (const [i, p] of pieces.entries()) {
    const ms = Date.parse(p.ts)
    if (i > 0) dt.push(ms - previous)
    previous = ms
    texts.push((p.event as { text: string }).text)
  }
  const doc: RunDoc = {
    run: first.event.kind as DeltaKind,
    turn_id: first.turn_id,
    session_id: first.session_id,
    tenant: first.tenant,
    ts: first.ts,
    dt,
    texts
  }
  return { turn_id: first.turn_id, seq: first.seq, last_seq: last.seq, doc: JSON.stringify(doc), events: pieces }
}

/**
 * The rows of `events` (any turns, each turn's in seq order): each maximal run of consecutive
 * deltas of one kind of a turn (at most MAX_RUN pieces) one row, every other event a row of its
 * own. Rows come out in the order of their first event.
 */
export function toRows (events: readonly BusEnvelope[]): RowOfEvents[] {
  const rows: Array<RowOfEvents | BusEnvelope[]> = []
  // Each turn's open run, as its place in `rows`.
  const open = new Map<string, BusEnvelope[]>()
  for (const e of events) {
    const current = open.get(e.turn_id)
    if (runnable(e) === null) {
      open.delete(e.turn_id)
      rows.push({ turn_id: e.turn_id, seq: e.seq, last_seq: deltaKind(e) === null ? null : e.seq, doc: encodeDoc(e), events: [e] })
      continue
    }
    const last = current?.at(-1)
    if (current !== undefined && last !== undefined && current.length < MAX_RUN && continues(last, e)) {
      current.push(e)
      continue
    }
    const run = [e]
    open.set(e.turn_id, run)
    rows.push(run)
  }
  return rows.map((r) => Array.isArray(r) ? runRow(r) : r)
}

/** The row without the envelopes it carries along. */
export function bareRow (row: EventRow): EventRow {
  return { turn_id: row.turn_id, seq: row.seq, last_seq: row.last_seq, doc: row.doc }
}

/** The envelopes a stored row holds, in seq order, exactly as they were published. */
export function fromRow (row: StoredRow): BusEnvelope[] {
  if (row.last_seq === null || row.last_seq <= row.seq) return [decodeEnvelope(row.doc)]
  const doc = JSON.parse(row.doc) as RunDoc
  const out: BusEnvelope[] = []
  let ms = Date.parse(doc.ts)
  for (const [i, text] of doc.texts.entries()) {
    if (i > 0) ms += doc.dt[i - 1] as number
    out.push({
      turn_id: doc.turn_id,
      session_id: doc.session_id,
      tenant: doc.tenant,
      seq: row.seq + i,
      ts: i === 0 ? doc.ts : new Date(ms).toISOString(),
      event: { kind: doc.run, text }
    })
  }
  return out
}

/**
 * The envelopes of `rows` (one turn's, ascending by seq) after `afterSeq`, at most `limit`. Rows
 * may overlap (a write retried after one that did land): each seq is taken once, from its first row.
 */
export function expandRows (rows: readonly StoredRow[], afterSeq: number, limit: number): BusEnvelope[] {
  const out: BusEnvelope[] = []
  let after = afterSeq
  for (const row of rows) {
    if ((row.last_seq ?? row.seq) <= after) continue
    for (const e of fromRow(row)) {
      if (e.seq <= after) continue
      if (out.length === limit) return out
      out.push(e)
      after = e.seq
    }
  }
  return out
}

/**
 * Reads a turn's events after `afterSeq` through `fetch` (rows whose last seq is past its
 * `after`, ascending, at most `limit`), expanded and cut to `limit`. Reads on when overlapping
 * rows gave fewer events than rows.
 */
export async function readExpanded (
  fetch: (after: number, limit: number) => Promise<StoredRow[]> | StoredRow[],
  afterSeq: number, limit: number
): Promise<BusEnvelope[]> {
  const out: BusEnvelope[] = []
  let after = afterSeq
  while (out.length < limit) {
    const want = limit - out.length
    const rows = await fetch(after, want)
    const events = expandRows(rows, after, want)
    out.push(...events)
    const last = events.at(-1)
    if (rows.length < want || last === undefined) break
    after = last.seq
  }
  return out
}

/** What finishing a turn changes of its delta rows: rows to delete (by seq and last seq), rows to insert. */
export interface Compaction {
  remove: Array<{ seq: number, last_seq: number }>
  insert: EventRow[]
}

/**
 * Compacts a turn's stored delta rows (those with a last seq, ascending by seq) into maximal
 * runs: the rows that change are removed and the runs that replace them inserted. Nothing when
 * every run is already one row.
 */
export function compact (rows: readonly StoredRow[]): Compaction {
  const deltas = rows.filter((r): r is Pick<EventRow, 'seq' | 'doc'> & { last_seq: number } => r.last_seq !== null)
  const target = toRows(expandRows(deltas, 0, Number.MAX_SAFE_INTEGER))
  const key = (r: { seq: number, last_seq: number | null }): string => `${r.seq}:${r.last_seq ?? r.seq}`
  const existing = new Set(deltas.map(key))
  const wanted = new Set(target.map(key))
  return {
    remove: deltas.filter((r) => !wanted.has(key(r))).map((r) => ({ seq: r.seq, last_seq: r.last_seq })),
    insert: target.filter((r) => !existing.has(key(r))).map(bareRow)
  }
}
