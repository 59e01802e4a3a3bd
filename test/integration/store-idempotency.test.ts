import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryStore } from '../../src/store/memory.js'
import { PostgresStore } from '../../src/store/postgres.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import type { IdempotencyClaim, SessionRecord, Store, TurnRecord } from '../../src/store/store.js'
import { deferrer, PG_URL, scratchSchema, type Defer } from '../helpers/services.js'

type Kind = 'memory' | 'sqlite' | 'postgres'

async function openPostgres (defer: Defer, schema: string, instanceId: string): Promise<Store> {
  const store = await PostgresStore.open({
    connectionString: PG_URL, schema, instanceId, maxConnections: 4, connectTimeoutMs: 5000, onIdleError: () => {}
  })
  defer(async () => { await store.close() })
  return store
}

async function openSqlite (defer: Defer, path: string): Promise<Store> {
  const store = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0 })
  defer(async () => { await store.close() })
  return store
}

async function scratchDir (defer: Defer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-idem-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

async function openStore (kind: Kind, defer: Defer): Promise<Store> {
  if (kind === 'memory') return new MemoryStore()
  if (kind === 'postgres') return await openPostgres(defer, scratchSchema(defer), 'inst-a')
  return await openSqlite(defer, join(await scratchDir(defer), 'tollgate.db'))
}

function turn (turnId: string, sessionId = `ses_${turnId}`): TurnRecord {
  const now = new Date().toISOString()
  return {
    turn_id: turnId, session_id: sessionId, agent: 'default', owner: 'acme/alice', status: 'running', created_at: now, updated_at: now,
    iterations: 0, tool_calls: [], approvals: [], pending_approvals: [], last_seq: 0
  }
}

function session (t: TurnRecord): SessionRecord {
  return {
    session_id: t.session_id, owner: t.owner, agent: 'default', created_at: t.created_at, updated_at: t.created_at,
    turn_ids: [t.turn_id], history: [], always_allowed: []
  }
}

function claim (over: Partial<IdempotencyClaim> = {}): IdempotencyClaim {
  return { owner: 'acme/alice', key: 'idem-1', fingerprint: '{"message":"hi"}', expiresMs: Date.now() + 60_000, ...over }
}

async function create (store: Store, turnId: string, c: IdempotencyClaim | null): Promise<ReturnType<Store['createTurn']>> {
  const t = turn(turnId)
  return await store.createTurn(t, session(t), c)
}

for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
  test(`${kind}: a second turn with a held idempotency key writes nothing and answers the first turn`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    assert.equal(await create(store, 'turn_1', claim()), null)
    assert.deepEqual(await create(store, 'turn_2', claim({ fingerprint: 'other' })), { turnId: 'turn_1', fingerprint: '{"message":"hi"}' })
    assert.equal(await store.getTurn('turn_2'), null)
    assert.equal(await store.getSession('acme', 'ses_turn_2'), null)
    assert.equal((await store.getTurn('turn_1'))?.status, 'running')
    assert.deepEqual(await store.getIdempotency('acme/alice', 'idem-1'), { turnId: 'turn_1', fingerprint: '{"message":"hi"}' })
  })

  test(`${kind}: the same key of another principal is another key`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    assert.equal(await create(store, 'turn_1', claim()), null)
    assert.equal(await create(store, 'turn_2', claim({ owner: 'acme/bob' })), null)
    assert.equal(await store.getIdempotency('acme/carol', 'idem-1'), null)
  })

  test(`${kind}: an expired key is no longer answered, is taken over by a new turn, and is pruned`, async (t) => {
    const store = await openStore(kind, deferrer(t))
    assert.equal(await create(store, 'turn_1', claim({ expiresMs: Date.now() - 1 })), null)
    assert.equal(await store.getIdempotency('acme/alice', 'idem-1'), null)
    assert.equal(await create(store, 'turn_2', claim()), null)
    assert.equal((await store.getIdempotency('acme/alice', 'idem-1'))?.turnId, 'turn_2')
    assert.equal(await create(store, 'turn_3', claim({ key: 'idem-2', expiresMs: Date.now() + 5 })), null)
    await store.pruneIdempotency(Date.now() + 10)
    assert.equal(await create(store, 'turn_4', claim({ key: 'idem-2' })), null, 'a pruned key is free again')
    assert.equal((await store.getIdempotency('acme/alice', 'idem-1'))?.turnId, 'turn_2', 'an unexpired key survives pruning')
  })
}

test('sqlite: an idempotency key is still held after the database is reopened', async (t) => {
  const defer = deferrer(t)
  const path = join(await scratchDir(defer), 'tollgate.db')
  const first = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0 })
  assert.equal(await create(first, 'turn_1', claim()), null)
  await first.close()
  const again = await openSqlite(defer, path)
  assert.deepEqual(await create(again, 'turn_2', claim()), { turnId: 'turn_1', fingerprint: '{"message":"hi"}' })
})

test('postgres: two instances racing with one idempotency key save exactly one turn, and every racer is answered that turn', async (t) => {
  const defer = deferrer(t)
  const schema = scratchSchema(defer)
  const [a, b] = await Promise.all([openPostgres(defer, schema, 'inst-a'), openPostgres(defer, schema, 'inst-b')])
  for (let round = 0; round < 5; round++) {
    const key = `race-${round}`
    const ids = Array.from({ length: 8 }, (_, i) => `turn_${round}_${i}`)
    const answers = await Promise.all(ids.map(async (id, i) => await create(i % 2 === 0 ? a : b, id, claim({ key }))))
    const winners = ids.filter((_, i) => answers[i] === null)
    assert.equal(winners.length, 1, JSON.stringify(answers))
    for (const answer of answers) if (answer !== null) assert.equal(answer.turnId, winners[0])
    const saved = await Promise.all(ids.map(async (id) => await a.getTurn(id)))
    assert.deepEqual(saved.flatMap((s) => s === null ? [] : [s.turn_id]), winners)
  }
})
