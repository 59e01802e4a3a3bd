/**
 * Compaction on PostgreSQL (decision 0281): a finished turn is queued for compaction by the
 * statement of its final save (`tollgate_compactions`), so a crash before the compaction leaves it
 * to the next start, whichever instance gets it first; a failed compaction is reported and tried
 * again, its rows reading the same meanwhile; a turn not worth it is not queued; a schema written
 * by a newer Tollgate is refused at start.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { PostgresStore, SCHEMA_VERSION } from '../../src/store/postgres.js'
import { deferrer, PG_URL, scratchSchema, type Defer } from '../helpers/services.js'
import { eventually } from '../helpers/eventually.js'
import { ANSWER, EVENTS, PIECES, streamAndFinish, streamedEvents, turnRecord } from '../fixtures/streamed-turn.js'

const CRASH_FIXTURE = fileURLToPath(new URL('../fixtures/pg-finish-and-crash.ts', import.meta.url))

/** Opens a store on `schema`, closed when the test ends; its compaction errors go to `errors`. */
async function openStore (defer: Defer, schema: string, instanceId: string, errors: unknown[] = []): Promise<PostgresStore> {
  const store = await PostgresStore.open({
    connectionString: PG_URL, schema, instanceId, maxConnections: 4, connectTimeoutMs: 5000,
    onIdleError: () => {}, onCompactionError: (err) => { errors.push(err) }
  })
  defer(async () => { await store.close() })
  return store
}

/** A connection of the test's own, to look at (and meddle with) the schema. */
async function connect (defer: Defer): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  defer(async () => { await client.end() })
  return client
}

interface Stored {
  rows: number
  deltaRows: number
  queued: number
  /** Event rows holding a piece of the answer verbatim. */
  texts: number
}

async function stored (client: pg.Client, schema: string): Promise<Stored> {
  const { rows: [counts] } = await client.query<Stored>(`SELECT
      (SELECT count(*)::int FROM "${schema}".tollgate_events WHERE turn_id = 'turn_1') AS rows,
      (SELECT count(last_seq)::int FROM "${schema}".tollgate_events WHERE turn_id = 'turn_1') AS "deltaRows",
      (SELECT count(*)::int FROM "${schema}".tollgate_compactions) AS queued,
      (SELECT count(*)::int FROM "${schema}".tollgate_events WHERE turn_id = 'turn_1' AND strpos(doc, 'tok0150') > 0) AS texts`)
  return counts as Stored
}

/** As the final save left them: a row per event (the piece, and the terminal event holding the answer), the turn queued. */
const AS_WRITTEN: Stored = { rows: EVENTS.length, deltaRows: PIECES.length, queued: 1, texts: 2 }
/** Compacted: the iteration, one run referring to the record's text, the terminal event referring to it too. */
const COMPACTED: Stored = { rows: 3, deltaRows: 1, queued: 0, texts: 0 }

async function assertReplays (store: PostgresStore): Promise<void> {
  for (const after of [0, 1, 2, 3, 100, 150, PIECES.length, PIECES.length + 1, PIECES.length + 2]) {
    for (const limit of [1, 7, 1000]) {
      assert.deepEqual(await store.readEvents('turn_1', after, limit), EVENTS.filter((e) => e.seq > after).slice(0, limit), `after ${after}, limit ${limit}`)
    }
  }
  assert.equal(await store.lastEventSeq('turn_1'), EVENTS.length)
}

/** A process that finishes the turn on `schema` and is killed right after the final save. */
async function finishAndCrash (schema: string): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', CRASH_FIXTURE, PG_URL, schema], { stdio: ['ignore', 'inherit', 'inherit'] })
  const [code, signal] = await once(child, 'exit') as [number | null, NodeJS.Signals | null]
  assert.equal(signal, 'SIGKILL', `the fixture exited with ${String(code)} instead of killing itself`)
}

test('postgres: a turn finished just before a crash is compacted by the next start, and replays as it was published', async (t) => {
  const defer = deferrer(t)
  const schema = scratchSchema(defer)
  const client = await connect(defer)
  await finishAndCrash(schema)
  assert.deepEqual(await stored(client, schema), AS_WRITTEN)
  const errors: unknown[] = []
  const store = await openStore(defer, schema, 'inst-b', errors)
  await eventually(async () => (await stored(client, schema)).queued === 0, { what: 'the restarted store compacting the queued turn', timeoutMs: 10_000 })
  await store.compacted()
  assert.deepEqual(await stored(client, schema), COMPACTED)
  assert.deepEqual(errors, [])
  await assertReplays(store)
  assert.equal((await store.getTurn('turn_1'))?.final_text, ANSWER)
})

test('postgres: instances starting together on a queued turn compact it once, and it replays as it was published', async (t) => {
  const defer = deferrer(t)
  const schema = scratchSchema(defer)
  const client = await connect(defer)
  await finishAndCrash(schema)
  // Counts the statements inserting event rows from now on: a compaction's runs are one (a sequence
  // counts also in a transaction that rolls back).
  await client.query(`CREATE SEQUENCE "${schema}".inserts;
    CREATE FUNCTION "${schema}".count_insert () RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      PERFORM nextval('"${schema}".inserts'); RETURN NULL;
    END $$;
    CREATE TRIGGER count_insert AFTER INSERT ON "${schema}".tollgate_events FOR EACH STATEMENT EXECUTE FUNCTION "${schema}".count_insert();`)
  const errors: unknown[] = []
  const stores = await Promise.all(['inst-b', 'inst-c', 'inst-d'].map(async (id) => await openStore(defer, schema, id, errors)))
  await Promise.all(stores.map(async (s) => { await s.compacted() }))
  assert.deepEqual(await stored(client, schema), COMPACTED)
  assert.deepEqual(errors, [])
  const { rows: [inserts] } = await client.query(`SELECT last_value::int AS n, is_called AS called FROM "${schema}".inserts`)
  assert.deepEqual(inserts, { n: 1, called: true }, 'one compaction inserted the runs')
  for (const store of stores) await assertReplays(store)
})

test('postgres: an instance leaves alone a queued turn another one is compacting, without waiting for it', async (t) => {
  const defer = deferrer(t)
  const schema = scratchSchema(defer)
  const client = await connect(defer)
  await finishAndCrash(schema)
  // Another instance's compaction, in its transaction: it holds the turn's queue row.
  const other = await connect(defer)
  await other.query('BEGIN')
  await other.query(`SELECT turn_id FROM "${schema}".tollgate_compactions WHERE turn_id = 'turn_1' FOR UPDATE`)
  const errors: unknown[] = []
  const store = await openStore(defer, schema, 'inst-b', errors)
  await store.compacted()
  assert.deepEqual(await stored(client, schema), AS_WRITTEN)
  await assertReplays(store)
  // That instance stopped without compacting it (its transaction rolled back): the next start does.
  await other.query('ROLLBACK')
  const again = await openStore(defer, schema, 'inst-c', errors)
  await again.compacted()
  assert.deepEqual(await stored(client, schema), COMPACTED)
  assert.deepEqual(errors, [])
  await assertReplays(again)
})

test('postgres: a turn interrupted for a dead instance is queued for compaction with its record, and compacted', async (t) => {
  const defer = deferrer(t)
  const schema = scratchSchema(defer)
  const client = await connect(defer)
  const dead = await openStore(defer, schema, 'inst-dead')
  const streamed = EVENTS.slice(0, -1)
  await dead.saveTurn(turnRecord('running', { final_text: undefined }))
  for (const e of streamed) await dead.appendEvents([e])
  const store = await openStore(defer, schema, 'inst-b')
  const ended = turnRecord('failed', { error: { code: 'instance_lost', message: 'the instance running it stopped' } })
  assert.equal(await store.interruptTurn(ended, 'inst-dead'), true)
  assert.equal(await store.interruptTurn(ended, 'inst-dead'), false, 'finished once')
  await store.compacted()
  assert.deepEqual(await stored(client, schema), { rows: 2, deltaRows: 1, queued: 0, texts: 1 })
  assert.deepEqual(await store.readEvents('turn_1', 0, 1000), streamed)
})

/** Makes the next `n` deletes of event rows on `schema` fail (a sequence: its count survives the failed transactions). */
async function failEventDeletes (client: pg.Client, schema: string, n: number): Promise<void> {
  await client.query(`CREATE SEQUENCE "${schema}".refused_deletes;
    CREATE FUNCTION "${schema}".refuse_delete () RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF nextval('"${schema}".refused_deletes') <= ${n} THEN RAISE EXCEPTION 'event rows may not be deleted (test)'; END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER refuse_delete BEFORE DELETE ON "${schema}".tollgate_events FOR EACH STATEMENT EXECUTE FUNCTION "${schema}".refuse_delete();`)
}

function messages (errors: readonly unknown[]): string[] {
  return errors.map((e) => (e as Error).message)
}

test('postgres: a failed compaction is reported, its rows read the same, and it is tried again', async (t) => {
  const defer = deferrer(t)
  const schema = scratchSchema(defer)
  const client = await connect(defer)
  const errors: unknown[] = []
  const store = await openStore(defer, schema, 'inst-a', errors)
  await failEventDeletes(client, schema, 1)
  await streamAndFinish(store)
  await eventually(() => errors.length > 0, { what: 'the failure reported', timeoutMs: 10_000 })
  await assertReplays(store)
  await store.compacted()
  assert.deepEqual(messages(errors), ['event rows may not be deleted (test)'])
  assert.deepEqual(await stored(client, schema), COMPACTED)
  await assertReplays(store)
})

test('postgres: a compaction that keeps failing is tried a bounded number of times, then left queued for the next start', async (t) => {
  const defer = deferrer(t)
  const schema = scratchSchema(defer)
  const client = await connect(defer)
  const errors: unknown[] = []
  const store = await openStore(defer, schema, 'inst-a', errors)
  await failEventDeletes(client, schema, Number.MAX_SAFE_INTEGER)
  await streamAndFinish(store)
  await store.compacted()
  // The first try and three retries (1, 2 and 4 s after a failure).
  assert.deepEqual(messages(errors), Array(4).fill('event rows may not be deleted (test)'))
  assert.deepEqual(await stored(client, schema), AS_WRITTEN)
  await assertReplays(store)
  await store.close()
  await client.query(`DROP TRIGGER refuse_delete ON "${schema}".tollgate_events`)
  const again = await openStore(defer, schema, 'inst-b', errors)
  await again.compacted()
  assert.equal(errors.length, 4)
  assert.deepEqual(await stored(client, schema), COMPACTED)
  await assertReplays(again)
})

test('postgres: a turn that streamed one short delta is not queued for compaction; one long delta is', async (t) => {
  const defer = deferrer(t)
  const schema = scratchSchema(defer)
  const client = await connect(defer)
  const store = await openStore(defer, schema, 'inst-a')
  const terminal = async (): Promise<string> => (await client.query<{ doc: string }>(
    `SELECT doc FROM "${schema}".tollgate_events WHERE turn_id = 'turn_1' AND last_seq IS NULL AND seq > 1`)).rows[0]?.doc ?? ''

  await streamAndFinish(store, ['Hi there.'])
  await store.compacted()
  assert.deepEqual(await stored(client, schema), { rows: 3, deltaRows: 1, queued: 0, texts: 0 })
  assert.match(await terminal(), /"final_text":"Hi there\."/, 'the terminal event keeps its text: never compacted')
  assert.deepEqual(await store.readEvents('turn_1', 0, 10), streamedEvents(['Hi there.']))

  await client.query(`TRUNCATE "${schema}".tollgate_events, "${schema}".tollgate_turns`)
  const long = 'x'.repeat(600)
  await streamAndFinish(store, [long])
  await store.compacted()
  assert.match(await terminal(), /"final_text":\{"of_turn":true\}/, 'the terminal event refers to the record\'s text: compacted')
  assert.deepEqual(await store.readEvents('turn_1', 0, 10), streamedEvents([long]))
})

test('postgres: a schema stamped by a newer Tollgate is refused at start with its version; the current one and an unversioned one are accepted', async (t) => {
  const defer = deferrer(t)
  const schema = scratchSchema(defer)
  const client = await connect(defer)
  const first = await openStore(defer, schema, 'inst-a')
  await first.close()
  const version = async (): Promise<number[]> =>
    (await client.query<{ version: number }>(`SELECT version FROM "${schema}".tollgate_schema`)).rows.map((r) => r.version)
  assert.deepEqual(await version(), [SCHEMA_VERSION])

  await client.query(`UPDATE "${schema}".tollgate_schema SET version = $1`, [SCHEMA_VERSION + 1])
  await assert.rejects(openStore(defer, schema, 'inst-b'), {
    message: `cannot open the PostgreSQL store: the schema "${schema}" was written by a newer Tollgate (schema version ${SCHEMA_VERSION + 1}; this one knows versions up to ${SCHEMA_VERSION})`
  })
  assert.deepEqual(await version(), [SCHEMA_VERSION + 1], 'the refused start changed nothing')

  await client.query(`UPDATE "${schema}".tollgate_schema SET version = $1`, [SCHEMA_VERSION])
  await (await openStore(defer, schema, 'inst-c')).close()
  // A schema an earlier Tollgate made (no version kept) is upgraded in place and stamped.
  await client.query(`DROP TABLE "${schema}".tollgate_schema, "${schema}".tollgate_compactions`)
  await (await openStore(defer, schema, 'inst-d')).close()
  assert.deepEqual(await version(), [SCHEMA_VERSION])
})
