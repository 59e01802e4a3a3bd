import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BusEnvelope } from '../../src/bus/bus.js'
import { MemoryStore } from '../../src/store/memory.js'
import { PostgresStore } from '../../src/store/postgres.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { SqlCounter } from '../../src/store/sql-probe.js'
import type { SessionRecord, Store, TurnRecord } from '../../src/store/store.js'
import { deferrer, PG_URL, scratchSchema, type Defer } from '../helpers/services.js'
import { eventually } from '../helpers/eventually.js'

type Kind = 'memory' | 'sqlite' | 'postgres'
const KINDS: Kind[] = ['memory', 'sqlite', 'postgres']

async function sqlitePath (defer: Defer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-sqlite-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  return join(dir, 'nested', 'tollgate.db')
}

async function openPostgres (defer: Defer, schema: string, instanceId: string): Promise<Store> {
  const store = await PostgresStore.open({
    connectionString: PG_URL, schema, instanceId, maxConnections: 4, connectTimeoutMs: 5000, onIdleError: () => {}
  })
  defer(async () => { await store.close() })
  return store
}

async function openStore (kind: Kind, defer: Defer, instanceId = 'inst-a'): Promise<Store> {
  if (kind === 'memory') return new MemoryStore({ instanceId })
  if (kind === 'postgres') return await openPostgres(defer, scratchSchema(defer), instanceId)
  const store = new SqliteStore({ path: await sqlitePath(defer), instanceId })
  defer(async () => { await store.close() })
  return store
}

function turn (over: Partial<TurnRecord> = {}): TurnRecord {
  const now = new Date().toISOString()
  return {
    turn_id: 'turn_1', session_id: 'ses_1', agent: 'default', owner: 'local/local', status: 'running', created_at: now, updated_at: now,
    iterations: 0, tool_calls: [], approvals: [], pending_approvals: [], last_seq: 0, ...over
  }
}

function session (over: Partial<SessionRecord> = {}): SessionRecord {
  const now = new Date().toISOString()
  return {
    session_id: 'ses_1', owner: 'local/local', agent: 'default', created_at: now, updated_at: now, turn_ids: ['turn_1'],
    history: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }], always_allowed: [{ tool: 'file_write' }], ...over
  }
}

function envelope (turnId: string, seq: number): BusEnvelope {
  return { turn_id: turnId, session_id: 'ses_1', tenant: 'local', seq, ts: new Date().toISOString(), event: { kind: 'text.delta', text: `piece ${seq}` } }
}

for (const kind of KINDS) {
  test(`${kind}: a saved session and turn read back as saved`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    const s = session()
    const tr = turn({ iterations: 2, tool_calls: [{ call_id: 'c1', iteration: 1, index: 0, name: 'file_read', arguments: { path: 'a' }, status: 'ok', success: true, output: 'x', duration_ms: 3 }] })
    await store.saveSession(s)
    await store.saveTurn(tr)
    assert.deepEqual(await store.getSession('local', 'ses_1'), s)
    assert.deepEqual(await store.getTurn('turn_1'), tr)
    assert.equal(await store.getSession('local', 'ses_missing'), null)
    assert.equal(await store.getTurn('turn_missing'), null)
  })

  test(`${kind}: a turn recorded as terminal never changes again`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    await store.saveTurn(turn())
    await store.saveTurn(turn({ status: 'interrupted', error: { code: 'INTERRUPTED', message: 'gone' } }))
    await store.saveTurn(turn({ status: 'completed', final_text: 'late' }))
    const stored = await store.getTurn('turn_1')
    assert.equal(stored?.status, 'interrupted')
    assert.equal(stored?.final_text, undefined)
  })

  test(`${kind}: a turn and its session saved as one pair read back as saved, and a terminal turn still keeps its first outcome`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    const s = session()
    await store.saveTurnAndSession(turn(), session({ history: [] }))
    await store.saveTurnAndSession(turn({ status: 'completed', final_text: 'done', last_seq: 4 }), s)
    assert.deepEqual(await store.getSession('local', 'ses_1'), s)
    assert.equal((await store.getTurn('turn_1'))?.final_text, 'done')
    await store.saveTurnAndSession(turn({ status: 'failed' }), session({ turn_ids: ['turn_1', 'turn_2'] }))
    assert.equal((await store.getTurn('turn_1'))?.status, 'completed')
    assert.deepEqual((await store.getSession('local', 'ses_1'))?.turn_ids, ['turn_1', 'turn_2'])
  })

  test(`${kind}: a new turn's first event is written with the turn, its session and its claim, and none of them when the claim is held`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    const started = (turnId: string): BusEnvelope => ({
      turn_id: turnId, session_id: 'ses_1', tenant: 'local', seq: 1, ts: new Date().toISOString(), event: { kind: 'turn.started', session_id: 'ses_1', agent: 'default' }
    })
    const claim = { owner: 'local/local', key: 'idem-1', fingerprint: '{}', expiresMs: Date.now() + 60_000 }
    const first = started('turn_1')
    assert.equal(await store.createTurn(turn({ last_seq: 1 }), session(), claim, [first]), null)
    assert.deepEqual(await store.readEvents('turn_1', 0, 10), [first])
    assert.equal((await store.getTurn('turn_1'))?.last_seq, 1)
    const held = await store.createTurn(turn({ turn_id: 'turn_2' }), session({ turn_ids: ['turn_1', 'turn_2'] }), claim, [started('turn_2')])
    assert.deepEqual(held, { turnId: 'turn_1', fingerprint: '{}' })
    assert.equal(await store.getTurn('turn_2'), null)
    assert.deepEqual(await store.readEvents('turn_2', 0, 10), [])
    assert.deepEqual((await store.getSession('local', 'ses_1'))?.turn_ids, ['turn_1'])
    // Without a claim, the same: one write of turn, session and event.
    assert.equal(await store.createTurn(turn({ turn_id: 'turn_3' }), session({ turn_ids: ['turn_1', 'turn_3'] }), null, [started('turn_3')]), null)
    assert.deepEqual((await store.readEvents('turn_3', 0, 10)).map((e) => [e.seq, e.event.kind]), [[1, 'turn.started']])
    assert.deepEqual((await store.getSession('local', 'ses_1'))?.turn_ids, ['turn_1', 'turn_3'])
  })

  test(`${kind}: a turn's final save appends the events it carries, and events already stored are kept as they were`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    await store.appendEvents([envelope('turn_1', 1), envelope('turn_1', 2)])
    const closing: BusEnvelope = {
      turn_id: 'turn_1', session_id: 'ses_1', tenant: 'local', seq: 4, ts: new Date().toISOString(), event: { kind: 'turn.completed', final_text: 'done' }
    }
    await store.saveTurnAndSession(turn({ status: 'completed', final_text: 'done', last_seq: 4 }), session(), [
      { ...envelope('turn_1', 2), event: { kind: 'text.delta', text: 'a rewrite' } }, envelope('turn_1', 3), closing
    ])
    assert.equal((await store.getTurn('turn_1'))?.status, 'completed')
    const stored = await store.readEvents('turn_1', 0, 10)
    assert.deepEqual(stored.map((e) => e.seq), [1, 2, 3, 4])
    assert.deepEqual(stored[1]?.event, { kind: 'text.delta', text: 'piece 2' })
    assert.deepEqual(stored[3], closing)
  })

  test(`${kind}: events read back in seq order after a seq, and an event stored twice is kept once`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    const first = envelope('turn_1', 1)
    await store.appendEvents([first, envelope('turn_1', 2), envelope('turn_2', 1)])
    await store.appendEvents([{ ...envelope('turn_1', 2), event: { kind: 'text.delta', text: 'a rewrite' } }, envelope('turn_1', 3)])
    assert.deepEqual((await store.readEvents('turn_1', 0, 100)).map((e) => e.seq), [1, 2, 3])
    assert.deepEqual((await store.readEvents('turn_1', 0, 100))[1]?.event, { kind: 'text.delta', text: 'piece 2' })
    assert.deepEqual((await store.readEvents('turn_1', 1, 1)).map((e) => e.seq), [2])
    assert.deepEqual(await store.readEvents('turn_1', 3, 100), [])
    assert.deepEqual((await store.readEvents('turn_1', 0, 1))[0], first)
    assert.equal(await store.lastEventSeq('turn_1'), 3)
    assert.equal(await store.lastEventSeq('turn_none'), 0)
  })

  test(`${kind}: deltas written in one append read back from any seq, the middle of their run included, cut to the limit`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    const at = Date.now()
    const delta = (seq: number, text: string): BusEnvelope => ({ ...envelope('turn_1', seq), ts: new Date(at + seq * 3).toISOString(), event: { kind: 'text.delta', text } })
    const all = [
      { ...envelope('turn_1', 1), event: { kind: 'iteration', n: 1 } } as BusEnvelope,
      ...Array.from({ length: 8 }, (_, i) => delta(i + 2, `piece ${i} ✓`)),
      { ...envelope('turn_1', 10), event: { kind: 'reasoning.delta', text: 'hm' } } as BusEnvelope,
      delta(11, 'more')
    ]
    await store.appendEvents(all.slice(0, 6))
    await store.appendEvents(all.slice(6))
    for (let after = 0; after <= 11; after++) {
      for (const limit of [1, 2, 100]) {
        assert.deepEqual(await store.readEvents('turn_1', after, limit), all.filter((e) => e.seq > after).slice(0, limit), `after ${after}, limit ${limit}`)
      }
    }
    assert.equal(await store.lastEventSeq('turn_1'), 11)
    // A run written again with more pieces (a write retried, after one that did land, with what
    // queued since): the pieces after the stored ones land too.
    const longer = Array.from({ length: 4 }, (_, i) => delta(12 + i, `again ${i}`))
    await store.appendEvents(longer.slice(0, 2))
    await store.appendEvents(longer)
    assert.deepEqual(await store.readEvents('turn_1', 11, 100), longer)
    assert.equal(await store.lastEventSeq('turn_1'), 15)
    // Finished: the deltas compacted into runs read back the same.
    await store.saveTurnAndSession(turn({ status: 'completed', final_text: 'done', last_seq: 15 }), session())
    assert.deepEqual(await store.readEvents('turn_1', 0, 100), [...all, ...longer])
    assert.deepEqual(await store.readEvents('turn_1', 4, 3), all.slice(4, 7))
  })

  test(`${kind}: a turn interrupted for a dead instance keeps its streamed events as they were written`, async (t) => {
    const store = await openStore(kind, deferrer(t), 'inst-a')
    await store.saveTurn(turn())
    const written = Array.from({ length: 6 }, (_, i) => envelope('turn_1', i + 1))
    for (const e of written) await store.appendEvents([e])
    assert.equal(await store.interruptTurn(turn({ status: 'interrupted', last_seq: 6 }), 'inst-a'), true)
    assert.deepEqual(await store.readEvents('turn_1', 0, 100), written)
    assert.deepEqual(await store.readEvents('turn_1', 3, 2), written.slice(3, 5))
  })

  test(`${kind}: interrupting a running turn succeeds once, and only under the instance that saved it`, async (t) => {
    const store = await openStore(kind, deferrer(t), 'inst-a')
    await store.saveTurn(turn())
    const ended = turn({ status: 'interrupted', error: { code: 'INTERRUPTED', message: 'gone' }, last_seq: 4 })
    assert.equal(await store.interruptTurn(ended, 'inst-b'), false)
    assert.equal(await store.interruptTurn(ended, 'inst-a'), true)
    assert.equal(await store.interruptTurn(ended, 'inst-a'), false)
    assert.equal((await store.getTurn('turn_1'))?.last_seq, 4)
  })

  test(`${kind}: running turns are listed with the instance that saved them`, async (t) => {
    const store = await openStore(kind, deferrer(t), 'inst-a')
    await store.saveTurn(turn({ turn_id: 'turn_run' }))
    await store.saveTurn(turn({ turn_id: 'turn_done', status: 'completed', final_text: 'ok' }))
    const running = await store.runningTurns()
    assert.deepEqual(running, [{ turnId: 'turn_run', instanceId: 'inst-a' }])
  })

  test(`${kind}: pruning drops the events of turns finished before the cutoff and keeps the rest`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    const old = new Date(Date.now() - 60_000).toISOString()
    await store.saveTurn(turn({ turn_id: 'turn_old', status: 'completed', final_text: 'x', updated_at: old }))
    await store.saveTurn(turn({ turn_id: 'turn_live' }))
    await store.appendEvents([envelope('turn_old', 1), envelope('turn_live', 1)])
    await store.prune(Date.now() - 30_000)
    assert.deepEqual(await store.readEvents('turn_old', 0, 10), [])
    assert.equal((await store.readEvents('turn_live', 0, 10)).length, 1)
  })

  test(`${kind}: sessions and turns list per owner, newest first, in keyset pages that neither skip nor repeat`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    const at = (n: number): string => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString()
    for (let n = 1; n <= 5; n++) {
      await store.saveTurnAndSession(
        turn({ turn_id: `turn_${n}`, session_id: `ses_${n % 2}`, created_at: at(n), status: n === 5 ? 'running' : 'completed' }),
        session({ session_id: `ses_${n}`, updated_at: at(10 - n), turn_ids: [`turn_${n}`] })
      )
    }
    // Same time, ids break the tie; another owner's records never show.
    await store.saveSession(session({ session_id: 'ses_9', updated_at: at(9) }))
    await store.saveTurnAndSession(turn({ turn_id: 'turn_x', owner: 'other/x', created_at: at(30) }), session({ session_id: 'ses_x', owner: 'other/x', updated_at: at(30) }))

    const first = await store.listSessions('local/local', 3)
    assert.deepEqual(first.map((x) => x.session_id), ['ses_9', 'ses_1', 'ses_2'])
    const last = first.at(-1) as SessionRecord
    const second = await store.listSessions('local/local', 3, { at: last.updated_at, id: last.session_id })
    assert.deepEqual(second.map((x) => x.session_id), ['ses_3', 'ses_4', 'ses_5'])
    assert.deepEqual(await store.listSessions('nobody/none', 3), [])

    assert.deepEqual((await store.listTurns('local/local', {}, 10)).map((x) => x.turn_id), ['turn_5', 'turn_4', 'turn_3', 'turn_2', 'turn_1'])
    assert.deepEqual((await store.listTurns('local/local', {}, 2, { at: at(4), id: 'turn_4' })).map((x) => x.turn_id), ['turn_3', 'turn_2'])
    assert.deepEqual((await store.listTurns('local/local', { sessionId: 'ses_1' }, 10)).map((x) => x.turn_id), ['turn_5', 'turn_3', 'turn_1'])
    assert.deepEqual((await store.listTurns('local/local', { status: 'running' }, 10)).map((x) => x.turn_id), ['turn_5'])
    assert.deepEqual((await store.listTurns('local/local', { sessionId: 'ses_0', status: 'running' }, 10)).map((x) => x.turn_id), [])
  })

  test(`${kind}: a renewed lease is live until it is released`, async (t) => {
    const store = await openStore(kind, deferrer(t), 'inst-a')
    assert.deepEqual(await store.liveInstances(), [])
    await store.renewLease(60_000)
    assert.deepEqual(await store.liveInstances(), ['inst-a'])
    await store.releaseLease()
    assert.deepEqual(await store.liveInstances(), [])
  })
}

test('postgres: saves of one turn issued without waiting apply in call order', async (t) => {
  const store = await openStore('postgres', deferrer(t))
  const record = turn()
  const saves: Array<Promise<void>> = []
  for (let i = 1; i <= 30; i++) {
    record.last_seq = i
    saves.push(store.saveTurn(record))
  }
  await Promise.all(saves)
  assert.equal((await store.getTurn('turn_1'))?.last_seq, 30)
})

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`${kind}: a turn and session pair whose session write fails leaves the turn unwritten too`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    // NOT NULL owner: the session row is refused after the turn row was written in the same transaction.
    const broken = session({ owner: null as unknown as string })
    await assert.rejects(store.saveTurnAndSession(turn(), broken))
    assert.equal(await store.getTurn('turn_1'), null)
    assert.equal(await store.getSession('local', 'ses_1'), null)
  })
}

test('postgres: pair saves and single saves of one turn and one session issued without waiting apply in call order', async (t) => {
  const store = await openStore('postgres', deferrer(t))
  const saves: Array<Promise<void>> = []
  for (let i = 1; i <= 10; i++) {
    saves.push(store.saveTurn(turn({ last_seq: i * 3 })))
    saves.push(store.saveTurnAndSession(turn({ last_seq: i * 3 + 1 }), session({ turn_ids: [`t${i * 3 + 1}`] })))
    saves.push(store.saveSession(session({ turn_ids: [`t${i * 3 + 2}`] })))
  }
  await Promise.all(saves)
  assert.equal((await store.getTurn('turn_1'))?.last_seq, 31)
  assert.deepEqual((await store.getSession('local', 'ses_1'))?.turn_ids, ['t32'])
})

test('postgres: instances sharing a schema see each other\'s leases, and an expired lease is not live', async (t) => {
  const defer = deferrer(t)
  const schema = scratchSchema(defer)
  const a = await openPostgres(defer, schema, 'inst-a')
  const b = await openPostgres(defer, schema, 'inst-b')
  await a.renewLease(60_000)
  await b.renewLease(150)
  assert.deepEqual((await a.liveInstances()).sort(), ['inst-a', 'inst-b'])
  await eventually(async () => (await a.liveInstances()).length === 1, { what: 'inst-b\'s 150 ms lease to expire' })
  assert.deepEqual(await a.liveInstances(), ['inst-a'])
})

test('postgres: text with NUL characters and unicode round-trips', async (t) => {
  const store = await openStore('postgres', deferrer(t))
  const tr = turn({ final_text: 'a\u0000b — ✓ \ud83d\ude00', status: 'completed' })
  await store.saveTurn(tr)
  assert.equal((await store.getTurn('turn_1'))?.final_text, tr.final_text)
})

test('postgres: a schema name that is not a plain identifier is refused', async () => {
  await assert.rejects(
    PostgresStore.open({ connectionString: PG_URL, schema: 'x"; DROP TABLE y; --', instanceId: 'i', maxConnections: 1, connectTimeoutMs: 1000, onIdleError: () => {} }),
    /invalid PostgreSQL schema name/
  )
})

test('sqlite: a second store cannot open a database file that is in use', async (t) => {
  const defer = deferrer(t)
  const path = await sqlitePath(defer)
  const first = new SqliteStore({ path, instanceId: 'inst-a' })
  defer(async () => { await first.close() })
  assert.throws(() => new SqliteStore({ path, instanceId: 'inst-b' }), /in use by another gateway process/)
})

test('sqlite: records and events survive closing and reopening the file', async (t) => {
  const defer = deferrer(t)
  const path = await sqlitePath(defer)
  const first = new SqliteStore({ path, instanceId: 'inst-a' })
  const saved = session()
  await first.saveSession(saved)
  await first.saveTurn(turn({ status: 'completed', final_text: 'done' }))
  await first.appendEvents([envelope('turn_1', 1), envelope('turn_1', 2)])
  await first.close()
  const second = new SqliteStore({ path, instanceId: 'inst-b' })
  defer(async () => { await second.close() })
  assert.deepEqual(await second.getSession('local', 'ses_1'), saved)
  assert.equal((await second.getTurn('turn_1'))?.final_text, 'done')
  assert.deepEqual((await second.readEvents('turn_1', 0, 10)).map((e) => e.seq), [1, 2])
})

test('sqlite: finished turns written with a group of events are all in one transaction, or none of them', async (t) => {
  const store = await openStore('sqlite', deferrer(t)) as SqliteStore
  await store.createTurn(turn(), session(), null)
  await store.createTurn(turn({ turn_id: 'turn_2', session_id: 'ses_2' }), session({ session_id: 'ses_2', turn_ids: ['turn_2'] }), null)
  store.appendEventsNow([envelope('turn_1', 1), envelope('turn_2', 1)], [], [
    { turn: turn({ status: 'completed', final_text: 'one' }), session: session({ history: [{ role: 'user', content: 'one' }] }) },
    { turn: turn({ turn_id: 'turn_2', session_id: 'ses_2', status: 'failed' }), session: session({ session_id: 'ses_2', turn_ids: ['turn_2'] }) }
  ])
  assert.deepEqual([(await store.getTurn('turn_1'))?.final_text, (await store.getTurn('turn_2'))?.status], ['one', 'failed'])
  assert.deepEqual((await store.getSession('local', 'ses_1'))?.history, [{ role: 'user', content: 'one' }])
  // A row the database refuses (a NULL status) rolls the whole write back: no event, no other turn.
  assert.throws(() => {
    store.appendEventsNow([envelope('turn_1', 2)], [], [
      { turn: turn({ turn_id: 'turn_3', session_id: 'ses_3', status: 'completed' }), session: session({ session_id: 'ses_3' }) },
      { turn: turn({ turn_id: 'turn_4', session_id: 'ses_4', status: null as never }), session: session({ session_id: 'ses_4' }) }
    ])
  }, /NOT NULL/)
  assert.deepEqual((await store.readEvents('turn_1', 0, 10)).map((e) => e.seq), [1])
  assert.equal(await store.getTurn('turn_3'), null)
})

test('sqlite: turns created in one tick are written in one commit; one the database refuses fails alone; a key claimed earlier in the batch holds', async (t) => {
  const defer = deferrer(t)
  const probe = new SqlCounter()
  const store = new SqliteStore({ path: await sqlitePath(defer), instanceId: 'inst-a', probe })
  defer(async () => { await store.close() })
  const before = probe.snapshot().commits
  const claim = { owner: 'local/local', key: 'k1', fingerprint: 'f', expiresMs: Date.now() + 60_000 }
  const ids = ['turn_a', 'turn_b', 'turn_c', 'turn_d']
  const outcomes = await Promise.allSettled([
    store.createTurn(turn({ turn_id: 'turn_a', session_id: 'ses_a' }), session({ session_id: 'ses_a' }), claim, [envelope('turn_a', 1)]),
    store.createTurn(turn({ turn_id: 'turn_b', session_id: 'ses_b', status: null as never }), session({ session_id: 'ses_b' }), null),
    store.createTurn(turn({ turn_id: 'turn_c', session_id: 'ses_c' }), session({ session_id: 'ses_c' }), null),
    store.createTurn(turn({ turn_id: 'turn_d', session_id: 'ses_d' }), session({ session_id: 'ses_d' }), claim)
  ])
  assert.equal(probe.snapshot().commits - before, 1)
  assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
  assert.deepEqual(outcomes.map((o) => o.status === 'fulfilled' ? o.value : null), [null, null, null, { turnId: 'turn_a', fingerprint: 'f' }])
  assert.deepEqual(await Promise.all(ids.map(async (id) => (await store.getTurn(id))?.turn_id ?? null)), ['turn_a', null, 'turn_c', null])
  assert.deepEqual((await store.readEvents('turn_a', 0, 10)).map((e) => e.seq), [1])
})

test('sqlite: a schema-1 database is upgraded in place and its existing records are listed', async (t) => {
  const defer = deferrer(t)
  const path = await sqlitePath(defer)
  const { mkdirSync } = await import('node:fs')
  const { dirname } = await import('node:path')
  const { default: Database } = await import('better-sqlite3')
  mkdirSync(dirname(path), { recursive: true })
  const old = new Database(path)
  old.exec(`CREATE TABLE tollgate_sessions (session_id TEXT PRIMARY KEY, owner TEXT NOT NULL, doc TEXT NOT NULL);
    CREATE TABLE tollgate_turns (turn_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, owner TEXT NOT NULL, status TEXT NOT NULL,
      instance_id TEXT, finished_ms INTEGER, doc TEXT NOT NULL);`)
  const s = session()
  const { pending_approvals: _p, ...legacyTurn } = turn()
  old.prepare('INSERT INTO tollgate_sessions VALUES (?, ?, ?)').run(s.session_id, s.owner, JSON.stringify(s))
  old.prepare('INSERT INTO tollgate_turns VALUES (?, ?, ?, ?, ?, ?, ?)').run('turn_1', 'ses_1', 'local/local', 'running', 'inst-a', null, JSON.stringify(legacyTurn))
  old.pragma('user_version = 1')
  old.close()

  const store = new SqliteStore({ path, instanceId: 'inst-a' })
  defer(async () => { await store.close() })
  assert.deepEqual((await store.listSessions('local/local', 10)).map((x) => x.session_id), ['ses_1'])
  const listed = await store.listTurns('local/local', { status: 'running' }, 10)
  assert.deepEqual(listed.map((x) => [x.turn_id, x.pending_approvals]), [['turn_1', []]])
})
