/**
 * The store side of durable turns, on every store kind: checkpoints written with events, the
 * latest kept; a running turn taken over by exactly one instance; checkpoints of ended turns pruned.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import Database from 'better-sqlite3'
import type { BusEnvelope } from '../../src/bus/bus.js'
import { MemoryStore } from '../../src/store/memory.js'
import { PostgresStore } from '../../src/store/postgres.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import type { Store, TurnRecord } from '../../src/store/store.js'
import { deferrer, PG_URL, scratchSchema, type Defer } from '../helpers/services.js'

type Kind = 'memory' | 'sqlite' | 'postgres'

async function sqlitePath (defer: Defer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-durable-store-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  return join(dir, 'tollgate.db')
}

/** Two stores on one backing database (memory: one store, it is exclusive by nature). */
async function openStores (kind: Kind, defer: Defer): Promise<[Store, Store]> {
  if (kind === 'memory') {
    const store = new MemoryStore({ instanceId: 'inst-a' })
    return [store, store]
  }
  if (kind === 'sqlite') {
    const store = new SqliteStore({ path: await sqlitePath(defer), instanceId: 'inst-a', checkpointMs: 0 })
    defer(async () => { await store.close() })
    return [store, store]
  }
  const open = pgOpener(defer)
  return [await open('inst-a'), await open('inst-b')]
}

/** Opens PostgreSQL stores of different instances on one scratch schema, each closed after the test. */
function pgOpener (defer: Defer): (instanceId: string) => Promise<Store> {
  const schema = scratchSchema(defer)
  return async (instanceId) => {
    const store = await PostgresStore.open({
      connectionString: PG_URL, schema, instanceId, maxConnections: 4, connectTimeoutMs: 5000, onIdleError: () => {}
    })
    defer(async () => { await store.close() })
    return store
  }
}

function turn (over: Partial<TurnRecord> = {}): TurnRecord {
  const now = new Date().toISOString()
  return {
    turn_id: 'turn_1', session_id: 'ses_1', agent: 'default', owner: 'local/local', status: 'running', created_at: now, updated_at: now,
    iterations: 0, tool_calls: [], approvals: [], pending_approvals: [], last_seq: 0, ...over
  }
}

function envelope (seq: number): BusEnvelope {
  return { turn_id: 'turn_1', session_id: 'ses_1', tenant: 'local', seq, ts: new Date().toISOString(), event: { kind: 'iteration', n: seq } }
}

for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
  test(`${kind}: a checkpoint is written with its events, a later one replaces it and an earlier one does not`, async (t) => {
    const [store] = await openStores(kind, deferrer(t))
    assert.equal(await store.readCheckpoint('turn_1'), null)
    await store.appendEvents([envelope(1), envelope(2)], [{ turn_id: 'turn_1', seq: 2, doc: '{"at":2}' }])
    assert.deepEqual(await store.readCheckpoint('turn_1'), { turn_id: 'turn_1', seq: 2, doc: '{"at":2}' })
    assert.deepEqual((await store.readEvents('turn_1', 0, 10)).map((e) => e.seq), [1, 2])
    await store.appendEvents([envelope(3)], [{ turn_id: 'turn_1', seq: 3, doc: '{"at":3}' }])
    await store.appendEvents([], [{ turn_id: 'turn_1', seq: 1, doc: '{"at":1}' }])
    assert.deepEqual(await store.readCheckpoint('turn_1'), { turn_id: 'turn_1', seq: 3, doc: '{"at":3}' })
  })

  test(`${kind}: a running turn is taken over only from the instance that held it, and is then listed under the new one`, async (t) => {
    const [a, b] = await openStores(kind, deferrer(t))
    await a.saveTurn(turn())
    await a.saveTurn(turn({ turn_id: 'turn_2', status: 'completed', final_text: 'done' }))
    assert.equal(await b.adoptTurn('turn_1', 'inst-other'), false)
    assert.equal(await b.adoptTurn('turn_2', 'inst-a'), false, 'an ended turn is not taken over')
    assert.equal(await b.adoptTurn('turn_1', 'inst-a'), true)
    assert.deepEqual(await a.runningTurns(), [{ turnId: 'turn_1', instanceId: b.instanceId }])
  })

  test(`${kind}: checkpoints of turns no longer running are pruned, a running turn's is kept`, async (t) => {
    const [store] = await openStores(kind, deferrer(t))
    await store.saveTurn(turn())
    await store.saveTurn(turn({ turn_id: 'turn_2', status: 'completed', final_text: 'done' }))
    await store.appendEvents([], [{ turn_id: 'turn_1', seq: 1, doc: '{}' }, { turn_id: 'turn_2', seq: 4, doc: '{}' }])
    await store.pruneCheckpoints()
    assert.equal((await store.readCheckpoint('turn_1'))?.seq, 1)
    assert.equal(await store.readCheckpoint('turn_2'), null)
  })
}

test('postgres: two instances taking over one dead instance\'s turn: exactly one wins, and the dead one can no longer interrupt it', async (t) => {
  const open = pgOpener(deferrer(t))
  const [dead, b, c] = [await open('inst-dead'), await open('inst-b'), await open('inst-c')]
  await dead.saveTurn(turn())
  const won = await Promise.all([b.adoptTurn('turn_1', 'inst-dead'), c.adoptTurn('turn_1', 'inst-dead')])
  assert.deepEqual(won.filter(Boolean), [true])
  assert.equal(await dead.interruptTurn(turn({ status: 'interrupted' }), 'inst-dead'), false)
  assert.equal((await dead.runningTurns())[0]?.instanceId, won[0] === true ? 'inst-b' : 'inst-c')
})

test('sqlite: a schema-2 database gains the checkpoints table and is marked with the current schema (8)', async (t) => {
  const defer = deferrer(t)
  const path = await sqlitePath(defer)
  mkdirSync(dirname(path), { recursive: true })
  const old = new Database(path)
  old.exec('CREATE TABLE tollgate_events (turn_id TEXT NOT NULL, seq INTEGER NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (turn_id, seq)) WITHOUT ROWID')
  old.pragma('user_version = 2')
  old.close()
  const store = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0 })
  await store.appendEvents([envelope(1)], [{ turn_id: 'turn_1', seq: 1, doc: '{}' }])
  assert.equal((await store.readCheckpoint('turn_1'))?.seq, 1)
  await store.close()
  const reopened = new Database(path, { readonly: true })
  assert.equal(reopened.pragma('user_version', { simple: true }), 8)
  assert.ok((reopened.prepare('PRAGMA table_info(tollgate_events)').all() as Array<{ name: string }>).some((c) => c.name === 'last_seq'))
  reopened.close()
})
