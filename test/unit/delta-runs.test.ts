/**
 * Delta runs (src/store/delta-runs.ts): consecutive deltas of one kind become one row, and a row
 * expands back into exactly the envelopes that were published.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { BusEnvelope } from '../../src/core/envelope.js'
import type { TurnEvent } from '../../schemas/events.js'
import { bareRow, compact, expandRows, fromRow, MAX_RUN, readExpanded, toRows, type EventRow } from '../../src/store/delta-runs.js'

const T0 = Date.parse('2026-12-05T10:00:00.000Z')

function envelope (seq: number, event: TurnEvent, ms = T0 + seq * 7, turnId = 'turn_1'): BusEnvelope {
  return { turn_id: turnId, session_id: 'ses_1', tenant: 'acme', seq, ts: new Date(ms).toISOString(), event }
}

function text (seq: number, t: string, ms?: number): BusEnvelope {
  return envelope(seq, { kind: 'text.delta', text: t }, ms)
}

function reasoning (seq: number, t: string): BusEnvelope {
  return envelope(seq, { kind: 'reasoning.delta', text: t })
}

/** Rows as a store keeps them (without the envelopes a write carries along). */
function stored (events: readonly BusEnvelope[]): EventRow[] {
  return toRows(events).map(bareRow)
}

function expandAll (rows: readonly EventRow[]): BusEnvelope[] {
  return rows.flatMap((r) => fromRow(r))
}

test('a run of text deltas is one row that expands into the same envelopes, byte for byte', () => {
  const events = Array.from({ length: 200 }, (_, i) => text(i + 1, `tok${i} `))
  const rows = stored(events)
  assert.deepEqual(rows.map((r) => [r.seq, r.last_seq]), [[1, 200]])
  const back = expandAll(rows)
  assert.deepEqual(back, events)
  assert.deepEqual(back.map((e) => JSON.stringify(e)), events.map((e) => JSON.stringify(e)))
  assert.ok((rows[0] as EventRow).doc.length < 3000, `${(rows[0] as EventRow).doc.length} bytes`)
})

test('mixed kinds: text and reasoning runs are separate rows and other events stay rows of their own', () => {
  const events = [
    envelope(1, { kind: 'turn.started', session_id: 'ses_1', agent: 'default' }),
    reasoning(2, 'think'), reasoning(3, 'ing'),
    text(4, 'Hel'), text(5, 'lo'),
    envelope(6, { kind: 'iteration', n: 2 }),
    text(7, 'again'),
    reasoning(8, 'more'), text(9, 'x'), text(10, 'y')
  ]
  const rows = stored(events)
  assert.deepEqual(rows.map((r) => [r.seq, r.last_seq]), [[1, null], [2, 3], [4, 5], [6, null], [7, 7], [8, 8], [9, 10]])
  assert.deepEqual(expandAll(rows), events)
})

test('a single-piece run is stored as its envelope and reads back the same', () => {
  const events = [text(3, 'only')]
  const rows = stored(events)
  assert.deepEqual(rows, [{ turn_id: 'turn_1', seq: 3, last_seq: 3, doc: JSON.stringify(events[0]) }])
  assert.deepEqual(expandAll(rows), events)
})

test('unicode pieces, surrogate pairs split across pieces included, and escapes round-trip', () => {
  const events = [text(1, 'żółć '), text(2, '\ud83d'), text(3, '\ude00 日本'), text(4, '"quoted"\n\t\\'), text(5, '\u0000'), text(6, '')]
  const rows = stored(events)
  assert.equal(rows.length, 1)
  assert.deepEqual(expandAll(rows), events)
})

test('each piece keeps its own ts, also when the clock steps back or several share a millisecond', () => {
  const events = [text(1, 'a', T0), text(2, 'b', T0), text(3, 'c', T0 + 1500), text(4, 'd', T0 - 20), text(5, 'e', T0 + 86_400_000)]
  const rows = stored(events)
  assert.equal(rows.length, 1)
  assert.deepEqual(expandAll(rows).map((e) => e.ts), events.map((e) => e.ts))
})

test('a piece a run could not restore exactly is stored as it is, ending the run', () => {
  const odd = { ...text(2, 'b'), ts: '2026-12-05T10:00:00Z' }
  const extra = { ...text(4, 'd'), note: 'x' } as unknown as BusEnvelope
  const events = [text(1, 'a'), odd, text(3, 'c'), extra, text(5, 'e'), text(6, 'f')]
  const rows = stored(events)
  assert.deepEqual(rows.map((r) => [r.seq, r.last_seq]), [[1, 1], [2, 2], [3, 3], [4, 4], [5, 6]])
  assert.deepEqual(expandAll(rows), events)
})

test('a ts in the minute of an exact one is taken only in the exact form: others are stored as they are, and every piece reads back the same', () => {
  // The minute 10:00 is seen exact first (piece 1); then forms of that minute that are not toISOString's.
  const odd = ['2026-12-05T10:00:60.000Z', '2026-12-05T10:00:5a.000Z', '2026-12-05T10:00:05.000z', '2026-12-05T10:00:05,000Z', '2026-12-05T10:00:05.0000Z', '2026-12-05T10:00:05.00Z']
  const events = [text(1, 'a', T0), ...odd.map((ts, i) => ({ ...text(i + 2, `o${i}`), ts })), text(odd.length + 2, 'z', T0 + 59_999)]
  const rows = stored(events)
  assert.deepEqual(rows.map((r) => r.last_seq === r.seq), events.map(() => true))
  assert.deepEqual(expandAll(rows), events)
  // Random pieces of a few minutes, most exact, some with one character changed: each reads back as it was.
  let seed = 7
  const random = (n: number): number => { seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31; return seed % n }
  const mixed = Array.from({ length: 2000 }, (_, i) => {
    const e = text(i + 1, `w${i}`, T0 + random(180_000))
    if (random(4) > 0) return e
    const at = 14 + random(10)
    return { ...e, ts: e.ts.slice(0, at) + ':9.aZ0'.charAt(random(6)) + e.ts.slice(at + 1) }
  })
  assert.deepEqual(expandAll(stored(mixed)), mixed)
})

test('turns interleaved in one write each get their own runs', () => {
  const a = (seq: number): BusEnvelope => envelope(seq, { kind: 'text.delta', text: `a${seq}` }, T0, 'turn_a')
  const b = (seq: number): BusEnvelope => envelope(seq, { kind: 'text.delta', text: `b${seq}` }, T0, 'turn_b')
  const rows = stored([a(1), b(1), a(2), b(2), a(3)])
  assert.deepEqual(rows.map((r) => [r.turn_id, r.seq, r.last_seq]), [['turn_a', 1, 3], ['turn_b', 1, 2]])
})

test('a run holds at most MAX_RUN pieces', () => {
  const events = Array.from({ length: MAX_RUN + 5 }, (_, i) => text(i + 1, 'x'))
  const rows = stored(events)
  assert.deepEqual(rows.map((r) => [r.seq, r.last_seq]), [[1, MAX_RUN], [MAX_RUN + 1, MAX_RUN + 5]])
})

test('expanding from the middle of a run returns exactly the events after it, cut to the limit', () => {
  const events = [envelope(1, { kind: 'iteration', n: 1 }), ...Array.from({ length: 10 }, (_, i) => text(i + 2, `p${i}`)), envelope(12, { kind: 'iteration', n: 2 })]
  const rows = stored(events)
  for (let after = 0; after <= 12; after++) {
    for (const limit of [1, 3, 100]) {
      assert.deepEqual(expandRows(rows, after, limit), events.filter((e) => e.seq > after).slice(0, limit), `after ${after}, limit ${limit}`)
    }
  }
})

test('overlapping rows (a retried write that did land) give each seq once', async () => {
  const events = Array.from({ length: 8 }, (_, i) => text(i + 1, `p${i}`))
  const rows = [...stored(events.slice(0, 6)), ...stored(events.slice(3))].sort((x, y) => x.seq - y.seq)
  assert.deepEqual(expandRows(rows, 0, 100), events)
  const fetch = (after: number, limit: number): EventRow[] => rows.filter((r) => (r.last_seq ?? r.seq) > after).slice(0, limit)
  assert.deepEqual(await readExpanded(fetch, 0, 7), events.slice(0, 7))
  assert.deepEqual(await readExpanded(fetch, 4, 2), events.slice(4, 6))
})

test('compaction merges single rows into runs and leaves rows that are already runs alone', () => {
  const events = [envelope(1, { kind: 'iteration', n: 1 }), ...Array.from({ length: 5 }, (_, i) => text(i + 2, `p${i}`)), envelope(7, { kind: 'iteration', n: 2 }), text(8, 'z')]
  // As written one flush at a time: a row per piece.
  const live = events.flatMap((e) => stored([e]))
  const { remove, insert } = compact(live)
  assert.deepEqual(remove, [2, 3, 4, 5, 6].map((seq) => ({ seq, last_seq: seq })))
  assert.deepEqual(insert.map((r) => [r.seq, r.last_seq]), [[2, 6]])
  const after = [...live.filter((r) => !remove.some((x) => x.seq === r.seq)), ...insert].sort((x, y) => x.seq - y.seq)
  assert.deepEqual(expandAll(after), events)
  assert.deepEqual(compact(after), { remove: [], insert: [], rewrite: [] })
})

test('compaction takes the pieces kept elsewhere (the SQLite delta log\'s) into the runs, each seq once where a keyed row holds it too', () => {
  const events = [envelope(1, { kind: 'iteration', n: 1 }), ...Array.from({ length: 8 }, (_, i) => text(i + 2, `p${i} `))]
  // Seqs 2..4 keyed (4 written again keyed by a retried write), 4..9 in the log.
  const keyed = [...stored(events.slice(0, 1)), ...stored(events.slice(1, 3)), ...stored(events.slice(3, 4))]
  const moved = events.slice(3)
  const answer = 'p0 p1 p2 p3 p4 p5 p6 p7 '
  const { remove, insert } = compact(keyed, answer, moved)
  assert.deepEqual(remove, [{ seq: 2, last_seq: 3 }, { seq: 4, last_seq: 4 }])
  assert.deepEqual(insert.map((r) => [r.seq, r.last_seq]), [[2, 9]])
  const after = [...keyed.filter((r) => r.last_seq === null), ...insert].sort((x, y) => x.seq - y.seq)
  assert.deepEqual(expandRows(after, 0, 1000, answer), events)
})

/** A finished turn's rows as written one flush at a time: a row per event. */
function liveRows (events: readonly BusEnvelope[]): EventRow[] {
  return events.flatMap((e) => stored([e]))
}

/** The rows after applying a compaction. */
function applied (rows: readonly EventRow[], c: ReturnType<typeof compact>): EventRow[] {
  const gone = new Set(c.remove.map((r) => `${r.seq}:${r.last_seq}`))
  return [...rows.filter((r) => r.last_seq === null || !gone.has(`${r.seq}:${r.last_seq}`)), ...c.insert]
    .map((r) => ({ ...r, doc: c.rewrite.find((w) => w.seq === r.seq && r.last_seq === null)?.doc ?? r.doc }))
    .sort((x, y) => x.seq - y.seq)
}

function completed (seq: number, finalText: string): BusEnvelope {
  return envelope(seq, { kind: 'turn.completed', final_text: finalText, usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cost_usd: null } } as TurnEvent)
}

test('a finished turn whose pieces are its final_text keeps their lengths only, and rebuilds exactly from the text, from any seq', async () => {
  const pieces = ['Hel', 'lo, ', 'wörld ', '\ud83d', '\ude00', '', ' "done"\n']
  const answer = pieces.join('')
  const events = [
    envelope(1, { kind: 'iteration', n: 1 }),
    reasoning(2, 'th'), reasoning(3, 'ink'),
    ...pieces.map((p, i) => text(4 + i, p)),
    completed(4 + pieces.length, answer)
  ]
  const c = compact(liveRows(events), answer)
  const rows = applied(liveRows(events), c)
  assert.equal(c.rewrite.length, 1, 'turn.completed refers to the record')
  for (const r of rows) assert.ok(!r.doc.includes('wörld'), `row ${r.seq} holds the text: ${r.doc}`)
  assert.ok(rows.some((r) => r.doc.includes('"texts":["th","ink"]')), 'the reasoning keeps its texts')
  const last = events.length
  for (let after = 0; after <= last; after++) {
    for (const limit of [1, 2, 100]) {
      const want = events.filter((e) => e.seq > after).slice(0, limit)
      assert.deepEqual(expandRows(rows, after, limit, answer), want, `after ${after}, limit ${limit}`)
      let asked = 0
      const fetch = (a: number, n: number): EventRow[] => rows.filter((r) => (r.last_seq ?? r.seq) > a).slice(0, n)
      assert.deepEqual(await readExpanded(fetch, after, limit, () => { asked++; return answer }), want)
      assert.ok(asked <= 1)
    }
  }
  assert.deepEqual(expandRows(rows, 0, 100, answer).map((e) => JSON.stringify(e)), events.map((e) => JSON.stringify(e)), 'same key order')
  // Compacting again changes nothing; without the text the rows cannot be read.
  assert.deepEqual(compact(rows, answer), { remove: [], insert: [], rewrite: [] })
  assert.throws(() => expandRows(rows, 0, 100, null), /final_text/)
})

test('pieces that are not the final_text keep their texts, and a final_text that is not the record\'s stays in turn.completed', () => {
  // Streamed before a restart, then answered again: the first run is not part of the final text.
  const before = ['tok1 ', 'tok2 ', 'tok3 ']
  const after = ['Answered ', 'after.']
  const events = [
    ...before.map((p, i) => text(1 + i, p)),
    envelope(4, { kind: 'iteration', n: 2 }),
    ...after.map((p, i) => text(5 + i, p)),
    completed(7, 'Answered after.')
  ]
  const c = compact(liveRows(events), 'Answered after.')
  const rows = applied(liveRows(events), c)
  assert.ok(rows.some((r) => r.seq === 1 && r.doc.includes('"texts":["tok1 ","tok2 ","tok3 "]')))
  assert.ok(rows.some((r) => r.seq === 5 && r.doc.includes('"of_turn":0')))
  assert.deepEqual(expandRows(rows, 0, 100, 'Answered after.'), events)
  // The record's text differs from the event's (and from the pieces'): everything keeps its text.
  const other = compact(liveRows(events), 'Something else.')
  assert.deepEqual(other.rewrite, [])
  const kept = applied(liveRows(events), other)
  assert.ok(kept.every((r) => !r.doc.includes('of_turn')))
  assert.deepEqual(expandRows(kept, 0, 100, null), events)
})

test('a run stored by the previous format (its texts) reads back the same, with or without the turn\'s text, and compacts to the new one', () => {
  const events = [...Array.from({ length: 5 }, (_, i) => text(i + 1, `p${i} `)), completed(6, 'p0 p1 p2 p3 p4 ')]
  const old = stored(events)
  assert.ok((old[0] as EventRow).doc.includes('"texts":'))
  assert.deepEqual(expandRows(old, 0, 100), events)
  assert.deepEqual(expandRows(old, 2, 100, 'p0 p1 p2 p3 p4 '), events.slice(2))
  const c = compact(old, 'p0 p1 p2 p3 p4 ')
  assert.deepEqual(c.remove, [{ seq: 1, last_seq: 5 }])
  assert.deepEqual(expandRows(applied(old, c), 0, 100, 'p0 p1 p2 p3 p4 '), events)
})
