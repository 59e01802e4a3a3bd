/**
 * The schedule book in each store: a tick is claimed once however many claimers race for it; the
 * per-owner limit holds under concurrent creates; runs are kept newest first up to the bound; a
 * deleted schedule takes its runs with it and records no more.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryStore } from '../../src/store/memory.js'
import { PostgresStore } from '../../src/store/postgres.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import type { ScheduleRecord, ScheduleRunRecord } from '../../src/store/schedule-book.js'
import type { Store } from '../../src/store/store.js'
import { deferrer, PG_URL, scratchSchema, type Defer } from '../helpers/services.js'

type Kind = 'memory' | 'sqlite' | 'postgres'

async function openStores (kind: Kind, defer: Defer): Promise<[Store, Store]> {
  if (kind === 'memory') {
    const store = new MemoryStore()
    return [store, store]
  }
  if (kind === 'sqlite') {
    const dir = await mkdtemp(join(tmpdir(), 'tollgate-schedules-'))
    defer(async () => { await rm(dir, { recursive: true, force: true }) })
    const store = new SqliteStore({ path: join(dir, 'tollgate.db'), instanceId: 'a' })
    defer(async () => { await store.close() })
    return [store, store]
  }
  const schema = scratchSchema(defer)
  const open = async (instanceId: string): Promise<Store> => {
    const store = await PostgresStore.open({
      connectionString: PG_URL, schema, instanceId, maxConnections: 4, connectTimeoutMs: 5000, onIdleError: () => {}
    })
    defer(async () => { await store.close() })
    return store
  }
  // Two instances: claims race over separate connection pools.
  const a = await open('a')
  return [a, await open('b')]
}

function schedule (id: string, over: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    schedule_id: id, owner: 'acme/alice', tenant: 'acme', sub: 'alice', scopes: ['turns:write'], cron: '* * * * * *', timezone: 'UTC',
    message: 'tick', overlap: 'skip', on_approval: 'wait', enabled: true, catch_up: false, next_run_ms: 1000,
    created_at: `2027-01-01T00:00:0${id.slice(-1)}.000Z`, updated_at: '2027-01-01T00:00:00.000Z', ...over
  }
}

function run (scheduleId: string, firedMs: number): ScheduleRunRecord {
  return {
    run_id: `run_${firedMs}`, schedule_id: scheduleId, fired_ms: firedMs, fired_at: new Date(firedMs).toISOString(), outcome: 'skipped', reason: 'overlap'
  }
}

for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
  test(`${kind}: of many claims of one due tick exactly one wins, and the schedule moves on to the next`, async (t) => {
    const [a, b] = await openStores(kind, deferrer(t))
    assert.equal(await a.schedules.create(schedule('sch_1'), 10), true)
    assert.deepEqual((await b.schedules.due(1000, 10)).map((s) => s.schedule_id), ['sch_1'])
    const claims = await Promise.all(Array.from({ length: 8 }, async (_, i) => await (i % 2 === 0 ? a : b).schedules.claim('sch_1', 1000, 2000)))
    assert.equal(claims.filter(Boolean).length, 1)
    assert.deepEqual(await a.schedules.due(1999, 10), [])
    assert.equal((await b.schedules.get('sch_1'))?.next_run_ms, 2000)
    await a.schedules.update({ ...schedule('sch_1'), enabled: false, next_run_ms: 3000 })
    assert.equal(await b.schedules.claim('sch_1', 3000, 4000), false, 'a disabled schedule is not claimed')
    assert.deepEqual(await a.schedules.due(5000, 10), [])
  })

  test(`${kind}: the per-owner limit holds when creates race, and lists are per owner, newest first`, async (t) => {
    const [a, b] = await openStores(kind, deferrer(t))
    const made = await Promise.all([1, 2, 3, 4, 5].map(async (n) => await (n % 2 === 0 ? a : b).schedules.create(schedule(`sch_${n}`), 3)))
    assert.equal(made.filter(Boolean).length, 3)
    assert.equal(await a.schedules.create(schedule('sch_9', { owner: 'acme/bob' }), 3), true)
    const mine = (await b.schedules.list('acme/alice')).map((s) => s.schedule_id)
    assert.equal(mine.length, 3)
    assert.deepEqual(mine, [...mine].sort().reverse())
    assert.deepEqual((await a.schedules.list('acme/bob')).map((s) => s.schedule_id), ['sch_9'])
  })

  test(`${kind}: runs list newest first up to the kept bound; a deleted schedule loses its runs and records no more`, async (t) => {
    const [a, b] = await openStores(kind, deferrer(t))
    await a.schedules.create(schedule('sch_1'), 10)
    for (const ms of [1000, 3000, 2000, 4000]) await a.schedules.addRun(run('sch_1', ms), 3)
    assert.deepEqual((await b.schedules.runs('sch_1', 10)).map((r) => r.fired_ms), [4000, 3000, 2000])
    assert.deepEqual((await b.schedules.runs('sch_1', 10))[0], run('sch_1', 4000))
    await a.schedules.setLastTurn('sch_1', 'turn_1')
    assert.equal((await b.schedules.get('sch_1'))?.last_turn_id, 'turn_1')
    await a.schedules.update({ ...schedule('sch_1'), message: 'changed' })
    assert.deepEqual([(await b.schedules.get('sch_1'))?.message, (await b.schedules.get('sch_1'))?.last_turn_id], ['changed', 'turn_1'])
    assert.equal(await b.schedules.delete('sch_1'), true)
    await a.schedules.addRun(run('sch_1', 5000), 3)
    assert.deepEqual(await a.schedules.runs('sch_1', 10), [])
    assert.equal(await a.schedules.get('sch_1'), null)
    assert.equal(await b.schedules.delete('sch_1'), false)
  })
}
