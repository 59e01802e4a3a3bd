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
 *
 * A finished turn's answer is kept once (decision 0278): its record's `final_text`. When the turn
 * is compacted, a run of text pieces whose concatenation is part of that text keeps its pieces'
 * lengths and where they start in it (`of_turn`) instead of the texts, and a `turn.completed`
 * whose `final_text` is that text keeps `{"of_turn": true}` in its place. Reading such rows needs
 * the turn's final_text (`TurnText`), which the stores read from the turn record; rows written
 * before, or whose text is not the record's, keep their texts and read as they did.
 */
import type { BusEnvelope } from '../core/envelope.js'
import { decodeEnvelope, encodeDoc } from './codec.js'

/** A finished turn waits this long before the SQL stores compact its rows: the burst it finished in goes first. */
export const COMPACT_DELAY_MS = 200

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

/** The document of a run of two pieces or more: its texts, or where they are in the turn's final_text. */
interface RunDoc {
  run: DeltaKind
  turn_id: string
  session_id: string
  tenant: string
  /** The first piece's ts. */
  ts: string
  /** Each later piece's ts, in ms after the previous piece's. */
  dt: number[]
  texts?: string[]
  /** Where the first piece starts in the turn's final_text (UTF-16 code units, as JavaScript slices). */
  of_turn?: number
  /** Each piece's length there. */
  lens?: number[]
}

/** What a `turn.completed` keeps as its `final_text` when that is the turn record's. */
interface TextOfTurn { of_turn: true }

/** The finished turn's final_text (its record's), read when a row refers to it; null if there is none. */
export type TurnText = () => Promise<string | null> | string | null

/** In a row's document only where it refers to the turn's final_text (a string's quotes are escaped). */
const REFERS = '"of_turn":'

/** Whether the row's events are rebuilt with the turn's final_text (false positives only cost the read). */
export function refersToTurnText (row: StoredRow): boolean {
  return row.doc.includes(REFERS)
}

function missingText (turnId: string): Error {
  return new Error(`the stored events of ${turnId} refer to the final_text of a turn record that has none`)
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

/** Whether the envelope is streamed text (a piece a run can hold). */
export function isDelta (e: BusEnvelope): boolean {
  return deltaKind(e) !== null
}

/**
 * The seconds and milliseconds of an ISO timestamp of 24 characters (`…THH:mm:ss.sssZ`) as ms
 * into its minute, when they are in the form toISOString writes (seconds 00–59); null otherwise.
 */
function msIntoMinute (ts: string): number | null {
  let n = 0
  for (const i of [17, 18, 20, 21, 22]) {
    const d = ts.charCodeAt(i) - 48
    if (d < 0 || d > 9) return null
    n = n * 10 + d
  }
  if (ts.charCodeAt(19) !== 46 || ts.charCodeAt(23) !== 90 || n >= 60_000) return null
  return n
}

/**
 * `ts` as epoch ms when it is exactly the ISO form of that instant (a run restores it from the
 * ms); null otherwise. A pure function with memos: the deltas of one group were stamped in a few
 * milliseconds, and those of one millisecond share one string (IsoClock), so most skip the parse
 * and the formatting (about 0.7 µs a delta); a ts in the same minute as one found exact before
 * (a finished turn's pieces, which compaction checks one by one) needs only its last characters
 * read: a minute in the ISO form followed by valid seconds and milliseconds is the ISO form.
 */
const exactMs = ((): ((ts: string) => number | null) => {
  let lastTs = ''
  let lastMs: number | null = null
  // A `YYYY-MM-DDTHH:mm:` prefix of an exact ts, and that minute's start in epoch ms.
  let minute = '\u0000'
  let minuteMs = 0
  return (ts) => {
    if (ts === lastTs) return lastMs
    lastTs = ts
    const into = ts.length === 24 ? msIntoMinute(ts) : null
    if (into !== null && ts.startsWith(minute)) return (lastMs = minuteMs + into)
    const ms = Date.parse(ts)
    lastMs = Number.isFinite(ms) && new Date(ms).toISOString() === ts ? ms : null
    if (lastMs !== null && into !== null) {
      minute = ts.slice(0, 17)
      minuteMs = lastMs - into
    }
    return lastMs
  }
})()

/** Its ts as epoch ms when a run can restore this envelope exactly; null otherwise. */
function runnable (e: BusEnvelope): number | null {
  if (deltaKind(e) === null) return null
  if (!keysAre(e, ENVELOPE_KEYS) || !keysAre(e.event, EVENT_KEYS)) return null
  return exactMs(e.ts)
}

/** A piece may follow `last` in its run: same turn, next seq, same kind and shared fields. */
function continues (last: BusEnvelope, e: BusEnvelope): boolean {
  return e.seq === last.seq + 1 && e.event.kind === last.event.kind && e.session_id === last.session_id && e.tenant === last.tenant
}

function runDoc (pieces: readonly BusEnvelope[]): RunDoc {
  const first = pieces[0] as BusEnvelope
  const dt: number[] = []
  const texts: string[] = []
  let previous = exactMs(first.ts) ?? Date.parse(first.ts)
  for (const [i, p] of pieces.entries()) {
    const ms = exactMs(p.ts) ?? Date.parse(p.ts)
    if (i > 0) dt.push(ms - previous)
    previous = ms
    texts.push((p.event as { text: string }).text)
  }
  const { turn_id: turnId, session_id: sessionId, tenant, ts } = first
  return { run: first.event.kind as DeltaKind, turn_id: turnId, session_id: sessionId, tenant, ts, dt, texts }
}

function runRow (pieces: readonly BusEnvelope[]): RowOfEvents {
  const first = pieces[0] as BusEnvelope
  const last = pieces[pieces.length - 1] as BusEnvelope
  if (pieces.length === 1) return { turn_id: first.turn_id, seq: first.seq, last_seq: first.seq, doc: encodeDoc(first), events: pieces }
  return { turn_id: first.turn_id, seq: first.seq, last_seq: last.seq, doc: JSON.stringify(runDoc(pieces)), events: pieces }
}

/**
 * The rows of `events` (any turns, each turn's in seq order): each maximal run of consecutive
 * deltas of one kind of a turn (at most MAX_RUN pieces) one row, every other event a row of its
 * own. Rows come out in the order of their first event.
 */
export function toRows (events: readonly BusEnvelope[]): RowOfEvents[] {
  return grouped(events).map((r) => Array.isArray(r) ? runRow(r) : r)
}

/** toRows' rows, each run still as its pieces (its document not made yet). */
function grouped (events: readonly BusEnvelope[]): Array<RowOfEvents | BusEnvelope[]> {
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
  return rows
}

/** The row without the envelopes it carries along. */
export function bareRow (row: EventRow): EventRow {
  return { turn_id: row.turn_id, seq: row.seq, last_seq: row.last_seq, doc: row.doc }
}

function isTextOfTurn (value: unknown): value is TextOfTurn {
  return typeof value === 'object' && value !== null && (value as TextOfTurn).of_turn === true
}

/** The texts of a run, its own or cut from the turn's final_text. */
function textsOf (doc: RunDoc, turnText: string | null): string[] {
  if (doc.texts !== undefined) return doc.texts
  if (turnText === null) throw missingText(doc.turn_id)
  let at = doc.of_turn ?? 0
  return (doc.lens ?? []).map((n) => turnText.slice(at, (at += n)))
}

/**
 * The envelopes a stored row holds, in seq order, exactly as they were published. `turnText`: the
 * turn's final_text, for a row that refers to it (`refersToTurnText`).
 */
export function fromRow (row: StoredRow, turnText: string | null = null): BusEnvelope[] {
  if (row.last_seq === null || row.last_seq <= row.seq) {
    const e = decodeEnvelope(row.doc)
    if (e.event.kind === 'turn.completed' && isTextOfTurn(e.event.final_text)) {
      if (turnText === null) throw missingText(e.turn_id)
      e.event.final_text = turnText
    }
    return [e]
  }
  const doc = JSON.parse(row.doc) as RunDoc
  const out: BusEnvelope[] = []
  let ms = Date.parse(doc.ts)
  for (const [i, text] of textsOf(doc, turnText).entries()) {
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
export function expandRows (rows: readonly StoredRow[], afterSeq: number, limit: number, turnText: string | null = null): BusEnvelope[] {
  const out: BusEnvelope[] = []
  let after = afterSeq
  for (const row of rows) {
    if ((row.last_seq ?? row.seq) <= after) continue
    for (const e of fromRow(row, turnText)) {
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
 * rows gave fewer events than rows. `turnText` is asked (once) only when a row refers to it.
 */
export async function readExpanded (
  fetch: (after: number, limit: number) => Promise<StoredRow[]> | StoredRow[],
  afterSeq: number, limit: number, turnText: TurnText = () => null
): Promise<BusEnvelope[]> {
  const out: BusEnvelope[] = []
  let after = afterSeq
  let text: string | null | undefined
  while (out.length < limit) {
    const want = limit - out.length
    const rows = await fetch(after, want)
    if (text === undefined && rows.some(refersToTurnText)) text = await turnText()
    const events = expandRows(rows, after, want, text ?? null)
    out.push(...events)
    const last = events.at(-1)
    if (rows.length < want || last === undefined) break
    after = last.seq
  }
  return out
}

/**
 * What compacting a finished turn changes of its rows: rows to delete (by seq and last seq), rows
 * to insert, and documents to replace (by seq: the terminal event's).
 */
export interface Compaction {
  remove: Array<{ seq: number, last_seq: number }>
  insert: EventRow[]
  rewrite: Array<{ seq: number, doc: string }>
}

/**
 * The run as a reference into the turn's final_text, when its text is part of it: looked for at
 * `from` (where the previous run ended) first. Null when it is not (a reasoning run, text the
 * answer does not hold, such as an answer streamed before a restart).
 */
function referenced (pieces: readonly BusEnvelope[], turnText: string, from: number): { doc: string, end: number } | null {
  if (pieces.length < 2 || pieces[0]?.event.kind !== 'text.delta') return null
  const { texts = [], ...rest } = runDoc(pieces)
  const joined = texts.join('')
  const at = turnText.startsWith(joined, from) ? from : turnText.indexOf(joined)
  if (at === -1) return null
  const doc: RunDoc = { ...rest, of_turn: at, lens: texts.map((t) => t.length) }
  return { doc: JSON.stringify(doc), end: at + joined.length }
}

/**
 * `a` and `b` (each ascending by seq) as one list ascending by seq, each seq once: `a`'s piece
 * where both hold it (the same event, stored twice by a write retried after one that landed).
 */
function mergeBySeq (a: readonly BusEnvelope[], b: readonly BusEnvelope[]): BusEnvelope[] {
  const out: BusEnvelope[] = []
  let i = 0
  let j = 0
  let last = -Infinity
  while (i < a.length || j < b.length) {
    const x = a[i]
    const y = b[j]
    const e = y === undefined || (x !== undefined && x.seq <= y.seq) ? (i++, x as BusEnvelope) : (j++, y)
    if (e.seq <= last) continue
    out.push(e)
    last = e.seq
  }
  return out
}

/**
 * Compacts a finished turn's stored rows (its delta rows, those with a last seq, and its terminal
 * event's; ascending by seq) into maximal runs: the rows that change are removed and the runs
 * that replace them inserted. With `turnText`, the turn record's final_text, the runs of its text
 * and the `turn.completed` that carries it refer to it instead of holding it again. Nothing when
 * every row is already as it should be. `moved`: delta pieces of the turn kept elsewhere (the
 * SQLite delta log's rows, as the envelopes they hold, ascending by seq), which join its runs and
 * are never kept in place: every run they are in is inserted.
 */
export function compact (rows: readonly StoredRow[], turnText: string | null = null, moved: readonly BusEnvelope[] = []): Compaction {
  const deltas = rows.filter((r): r is Pick<EventRow, 'seq' | 'doc'> & { last_seq: number } => r.last_seq !== null)
  const stored = expandRows(deltas, 0, Number.MAX_SAFE_INTEGER, turnText)
  let from = 0
  const target = grouped(moved.length === 0 ? stored : mergeBySeq(stored, moved)).map((group): EventRow => {
    if (!Array.isArray(group)) return bareRow(group)
    const ref = turnText === null ? null : referenced(group, turnText, from)
    if (ref === null) return bareRow(runRow(group))
    from = ref.end
    const first = group[0] as BusEnvelope
    return { turn_id: first.turn_id, seq: first.seq, last_seq: (group[group.length - 1] as BusEnvelope).seq, doc: ref.doc }
  })
  const key = (r: { seq: number, last_seq: number | null }): string => `${r.seq}:${r.last_seq ?? r.seq}`
  const existing = new Map(deltas.map((r) => [key(r), r.doc]))
  const wanted = new Map(target.map((r) => [key(r), r.doc]))
  const rewrite: Compaction['rewrite'] = []
  for (const row of rows) {
    if (row.last_seq !== null || turnText === null || turnText === '' || !row.doc.includes('"turn.completed"')) continue
    const e = decodeEnvelope(row.doc)
    if (e.event.kind !== 'turn.completed' || e.event.final_text !== turnText) continue
    const ref: TextOfTurn = { of_turn: true }
    ;(e.event as { final_text: unknown }).final_text = ref
    rewrite.push({ seq: row.seq, doc: JSON.stringify(e) })
  }
  return {
    remove: deltas.filter((r) => wanted.get(key(r)) !== r.doc).map((r) => ({ seq: r.seq, last_seq: r.last_seq })),
    insert: target.filter((r) => existing.get(key(r)) !== r.doc),
    rewrite
  }
}
