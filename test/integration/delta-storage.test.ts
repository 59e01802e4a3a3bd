/**
 * Delta runs (src/store/delta-runs.ts) change how streamed text is stored, not what replays: over
 * the real server, a replay from any seq of a finished streamed turn (mid-run included; a JSON
 * page, an event stream from Last-Event-ID, a WebSocket subscribe) is what a live subscriber saw,
 * on SQLite and on PostgreSQL; a 200-piece answer takes a few KB of the
 * SQLite file; and after a gateway killed mid-stream, the replay holds every event the
 * subscriber saw before the kill, with the same seq, ts and text.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import type { EventEnvelope } from '../../schemas/events.js'
import { CRASH_AFTER_EVENT_WRITE_ENV } from '../fixtures/crash-points.js'
import { startFakeProvider } from '../helpers/fake-provider.js'
import { assertSeqContiguous, startGateway } from '../helpers/gateway.js'
import { events, finished, setup } from '../helpers/durable-sqlite.js'
import { deferrer, PG_URL, scratchSchema, type Defer } from '../helpers/services.js'
import { eventually } from '../helpers/eventually.js'

/** 200 pieces of 8 characters (the fake provider streams text so), some of them not ASCII. */
const REASONING = 'First I think about the question, then about the answer, piece by piece.'
const ANSWER = Array.from({ length: 200 }, (_, i) => (i % 17 === 0 ? `żółć ${i % 10}🙂` : `tok${String(i).padStart(3, '0')} `).padEnd(8, '.').slice(0, 8)).join('')

interface Followed {
  /** The events as they arrived, parsed from each frame's data. */
  seen: EventEnvelope[]
  /** Settles when the stream ends (the terminal event, or the connection dropped). */
  ended: Promise<void>
  close: () => void
}

/** Follows a turn's event stream (`GET …/events`, `Accept: text/event-stream`), from the start or from `Last-Event-ID`. */
async function follow (baseUrl: string, turnId: string, lastEventId?: number): Promise<Followed> {
  const controller = new AbortController()
  const headers: Record<string, string> = { accept: 'text/event-stream', ...(lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) }) }
  const response = await fetch(`${baseUrl}/v1/turns/${turnId}/events?after_seq=0`, { headers, signal: controller.signal })
  assert.equal(response.status, 200)
  const seen: EventEnvelope[] = []
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  const ended = (async () => {
    let buffer = ''
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        buffer += decoder.decode(value, { stream: true })
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const data = buffer.slice(0, end).split('\n').find((l) => l.startsWith('data: '))
          buffer = buffer.slice(end + 2)
          if (data !== undefined) seen.push(JSON.parse(data.slice(6)) as EventEnvelope)
        }
      }
    } catch {}
  })()
  return { seen, ended, close: () => { controller.abort() } }
}

/** A replay from every seq (0 to the last) equals what the subscriber saw after it. */
type Http = (method: string, path: string, body?: unknown) => Promise<{ status: number, body: any }>

async function assertEveryReplay (http: Http, turnId: string, seen: readonly EventEnvelope[]): Promise<void> {
  const last = seen.at(-1)?.seq ?? 0
  for (let after = 0; after <= last; after++) {
    const page = await http('GET', `/v1/turns/${turnId}/events?after_seq=${after}`)
    assert.equal(page.status, 200, JSON.stringify(page.body))
    assert.deepEqual(page.body.events, seen.filter((e) => e.seq > after), `replay after ${after}`)
  }
}

async function sqlitePath (defer: Defer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-delta-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  return join(dir, 'tollgate.db')
}

/** The turn's event rows in the file: how many, how many hold deltas, their documents' bytes. */
/** The turn's rows, keyed and in the delta log (a running turn's later delta rows). */
function storedRows (path: string, turnId: string): { rows: number, deltaRows: number, docBytes: number } {
  const db = new Database(path, { readonly: true })
  try {
    return db.prepare(`SELECT count(*) AS rows, count(last_seq) AS deltaRows, coalesce(sum(length(CAST(doc AS BLOB))), 0) AS docBytes FROM
      (SELECT last_seq, doc FROM tollgate_events WHERE turn_id = ? UNION ALL SELECT last_seq, doc FROM tollgate_delta_log WHERE turn_id = ?)`)
      .get(turnId, turnId) as { rows: number, deltaRows: number, docBytes: number }
  } finally {
    db.close()
  }
}

/** Starts a streamed turn whose answer waits until a subscriber follows it, and follows it to the end. */
async function streamedTurn (
  g: { url: string, http: Http },
  enqueue: (reply: object) => void
): Promise<{ turnId: string, seen: EventEnvelope[] }> {
  let open!: () => void
  const following = new Promise<void>((resolve) => { open = resolve })
  // A pause between pieces: most reach the log a flush of their own (a row each, until the finish).
  enqueue({ reasoning: REASONING, text: ANSWER, gate: following, chunkDelayMs: 1 })
  const started = await g.http('POST', '/v1/turns', { message: 'stream a long answer', detach: true })
  assert.equal(started.status, 202, JSON.stringify(started.body))
  const turnId = started.body.turn_id as string
  const followed = await follow(g.url, turnId)
  open()
  await followed.ended
  assert.equal(followed.seen.at(-1)?.event.kind, 'turn.completed')
  return { turnId, seen: followed.seen }
}

function deltaText (log: readonly EventEnvelope[], kind: 'text.delta' | 'reasoning.delta' = 'text.delta'): string {
  return log.map((e) => e.event.kind === kind ? (e.event as { text: string }).text : '').join('')
}

test('sqlite: a replay from every seq of a finished streamed turn is what the live subscriber saw, and the answer takes a few KB', async (t) => {
  const defer = deferrer(t)
  const path = await sqlitePath(defer)
  const g = await startGateway({ overrides: { store: { kind: 'sqlite', sqlite: { path } }, schedules: { enabled: false } } })
  let closed = false
  defer(async () => { if (!closed) await g.close() })
  const { turnId, seen } = await streamedTurn(g, (r) => { g.provider.enqueue(r) })
  assertSeqContiguous(seen)
  const deltas = seen.filter((e) => e.event.kind === 'text.delta' || e.event.kind === 'reasoning.delta')
  assert.ok(deltas.length >= 150, `${deltas.length} deltas`)
  assert.equal(deltaText(seen), ANSWER)
  assert.equal(deltaText(seen, 'reasoning.delta'), REASONING)
  await assertEveryReplay(g.http, turnId, seen)
  // The other ways back in, from inside the run too: an event stream resumed from Last-Event-ID, a
  // WebSocket subscribe from after_seq.
  const last = seen.at(-1)?.seq ?? 0
  for (const after of [0, 2, 3, 50, 101, last - 2, last - 1]) {
    const resumed = await follow(g.url, turnId, after)
    await resumed.ended
    assert.deepEqual(resumed.seen, seen.filter((e) => e.seq > after), `SSE from Last-Event-ID ${after}`)
    const ws = await g.socket()
    assert.equal((await ws.request({ type: 'subscribe', turn_id: turnId, after_seq: after })).type, 'subscribed')
    // The socket's event frames are envelopes with `type: "event"`.
    const received = (await ws.waitForTerminal(turnId) as Array<EventEnvelope & { type?: string }>).map(({ type: _type, ...e }) => e)
    assert.deepEqual(received, seen.filter((e) => e.seq > after), `WebSocket subscribe after_seq ${after}`)
    ws.close()
  }
  // After a graceful stop (the WAL copied into the file): what the turn takes there.
  await g.close()
  closed = true
  const stored = storedRows(path, turnId)
  t.diagnostic(`${seen.length} events (${deltas.length} deltas): ${stored.rows} rows, ${stored.docBytes} bytes of documents`)
  assert.equal(stored.deltaRows, 2, 'the reasoning\'s deltas are one run, the answer\'s another')
  assert.equal(stored.rows, seen.length - deltas.length + 2)
  assert.ok(stored.docBytes <= 8192, `${stored.docBytes} bytes stored for a ${deltas.length}-delta answer`)

  // The file reopened by a new gateway replays the same, from the store alone.
  const again = await startGateway({ overrides: { store: { kind: 'sqlite', sqlite: { path } }, schedules: { enabled: false } } })
  defer(async () => { await again.close() })
  await assertEveryReplay(again.http, turnId, seen)
})

test('postgres: a replay from every seq of a finished streamed turn is what the live subscriber saw', async (t) => {
  const defer = deferrer(t)
  const schema = scratchSchema(defer)
  const store = { kind: 'postgres', postgres: { url: PG_URL, schema } }
  const g = await startGateway({ overrides: { store, schedules: { enabled: false } } })
  defer(async () => { await g.close() })
  const { turnId, seen } = await streamedTurn(g, (r) => { g.provider.enqueue(r) })
  assertSeqContiguous(seen)
  assert.equal(deltaText(seen), ANSWER)
  assert.equal(deltaText(seen, 'reasoning.delta'), REASONING)
  await assertEveryReplay(g.http, turnId, seen)
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    type Stored = { rows: number, delta_rows: number, bytes: number } | undefined
    const stored = async (): Promise<Stored> => (await client.query<NonNullable<Stored>>(
      `SELECT count(*)::int AS rows, count(last_seq)::int AS delta_rows, sum(octet_length(doc))::int AS bytes
      FROM "${schema}".tollgate_events WHERE turn_id = $1`, [turnId])).rows[0]
    // Compacted shortly after the final save, off its path: fewer rows than events (the deltas in
    // runs), and the answer's text kept once, in the turn record.
    await eventually(async () => ((await stored())?.rows ?? Infinity) < seen.length / 4, { what: 'the turn compacted', timeoutMs: 10_000 })
    const rows = await stored()
    t.diagnostic(`${seen.length} events: ${JSON.stringify(rows)}`)
    const holding = await client.query(`SELECT seq FROM "${schema}".tollgate_events WHERE turn_id = $1 AND strpos(doc, $2) > 0`, [turnId, 'tok150'])
    assert.deepEqual(holding.rows, [], 'no event row holds the answer\'s text')
  } finally {
    await client.end()
  }
  // A second gateway on the same schema (nothing of the turn in its bus) replays it from the store.
  const other = await startGateway({ provider: g.provider, overrides: { store, schedules: { enabled: false } } })
  defer(async () => { await other.close() })
  await assertEveryReplay(other.http, turnId, seen)
})

for (const crash of ['killed by the test mid-stream', 'crashing right after writing its first delta, before publishing it'] as const) {
  test(`sqlite: a gateway ${crash} replays after its restart every event the subscriber saw, with the same seq, ts and text`, async (t) => {
    const defer = deferrer(t)
    const s = await setup(defer)
    const path = await sqlitePath(defer)
    const store = { store: { kind: 'sqlite', sqlite: { path } } }
    const env: Record<string, string> = crash.startsWith('crashing') ? { [CRASH_AFTER_EVENT_WRITE_ENV]: 'text.delta' } : {}
    const first = await s.start(store, env)
    const { turnId, followed } = await (async () => {
      let open!: () => void
      const following = new Promise<void>((resolve) => { open = resolve })
      // Slow enough that the kill lands while the answer streams.
      s.provider.enqueue({ text: ANSWER, gate: following, chunkDelayMs: 10 }, { text: 'Answered after the restart.' })
      const started = await first.http('POST', '/v1/turns', { message: 'stream a long answer', detach: true })
      assert.equal(started.status, 202, JSON.stringify(started.body))
      const id = started.body.turn_id as string
      const f = await follow(first.url, id)
      open()
      return { turnId: id, followed: f }
    })()
    if (crash.startsWith('killed')) {
      await eventually(() => followed.seen.filter((e) => e.event.kind === 'text.delta').length >= 50, { what: '50 deltas seen', timeoutMs: 15_000 })
      await first.kill()
    } else {
      await eventually(() => first.child.exitCode !== null || first.child.signalCode !== null, { what: 'the crash', timeoutMs: 15_000 })
    }
    await followed.ended
    const seen = [...followed.seen]
    assert.ok(seen.length >= 2, `${seen.length} events seen before the crash`)
    assert.ok(seen.every((e) => e.event.kind !== 'turn.completed'), 'the crash came before the end')
    const seenDeltas = seen.filter((e) => e.event.kind === 'text.delta').length
    // The pieces as the flushes wrote them (mostly a row each, 10 ms apart), not compacted: the
    // turn never finished in this process.
    const live = storedRows(path, turnId)
    if (crash.startsWith('killed')) assert.ok(live.deltaRows > 2, `${live.deltaRows} delta rows for ${seenDeltas} deltas seen`)

    const second = await s.start(store)
    const turn = await finished(second, turnId)
    const log = await events(second, turnId)
    assertSeqContiguous(log)
    assert.deepEqual(log.slice(0, seen.length), seen, 'every event seen before the crash replays as it was seen')
    assert.equal(turn.status, 'completed')
    assert.equal(log.at(-1)?.event.kind, 'turn.completed')
    const at = log.findIndex((e) => e.event.kind === 'turn.resumed')
    assert.ok(at >= seen.length, `the restart's events come after the ones seen (turn.resumed at ${at}, ${seen.length} seen)`)
    await assertEveryReplay(second.http, turnId, log)
    await second.stop()
    // Finished: the answer streamed before the crash is one run, the one after the restart another.
    assert.equal(storedRows(path, turnId).deltaRows, 2)
  })
}

test('a streamed turn replays the same on the memory store (the contract the SQL stores keep)', async (t) => {
  const defer = deferrer(t)
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const g = await startGateway({ provider })
  defer(async () => { await g.close() })
  const { turnId, seen } = await streamedTurn(g, (r) => { provider.enqueue(r) })
  await assertEveryReplay(g.http, turnId, seen)
})
