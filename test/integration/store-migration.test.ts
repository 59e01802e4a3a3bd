/**
 * A store written by the gateway before session ids were per tenant (SQLite schema 3, and the
 * PostgreSQL tables of the same version, made here with their DDL as it was) opens under the
 * current code and keeps working: its sessions belong to their owners' tenants, their history
 * goes on, their turns' stored events replay, and another tenant can use the same session id.
 * Opened twice, to show the migration runs once.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { startFakeProvider, type FakeProvider, type RecordedRequest } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { deferrer, PG_URL, scratchSchema } from '../helpers/services.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'

/** The SQLite schema (version 3) as the gateway made it before this change. */
const SQLITE_SCHEMA_3 = `
CREATE TABLE tollgate_sessions (session_id TEXT PRIMARY KEY, owner TEXT NOT NULL, doc TEXT NOT NULL, updated_at TEXT);
CREATE TABLE tollgate_turns (
  turn_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, owner TEXT NOT NULL, status TEXT NOT NULL, instance_id TEXT,
  finished_ms INTEGER, doc TEXT NOT NULL, created_at TEXT
);
CREATE INDEX tollgate_turns_running ON tollgate_turns (status) WHERE status = 'running';
CREATE INDEX tollgate_turns_finished ON tollgate_turns (finished_ms) WHERE finished_ms IS NOT NULL;
CREATE TABLE tollgate_events (turn_id TEXT NOT NULL, seq INTEGER NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (turn_id, seq)) WITHOUT ROWID;
CREATE TABLE tollgate_instances (instance_id TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL);
CREATE TABLE tollgate_checkpoints (turn_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, doc TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE tollgate_idempotency (
  owner TEXT NOT NULL, idem_key TEXT NOT NULL, turn_id TEXT NOT NULL, fingerprint TEXT NOT NULL, expires_ms INTEGER NOT NULL,
  PRIMARY KEY (owner, idem_key)
) WITHOUT ROWID;
CREATE INDEX tollgate_sessions_by_owner ON tollgate_sessions (owner, updated_at DESC, session_id DESC);
CREATE INDEX tollgate_turns_by_owner ON tollgate_turns (owner, created_at DESC, turn_id DESC);
PRAGMA user_version = 3;
`

/** The PostgreSQL tables as the gateway made them before this change. */
function postgresBefore (s: string): string {
  return `
CREATE SCHEMA ${s};
CREATE TABLE ${s}.tollgate_sessions (session_id text PRIMARY KEY, owner text NOT NULL, doc text NOT NULL);
CREATE TABLE ${s}.tollgate_turns (
  turn_id text PRIMARY KEY, session_id text NOT NULL, owner text NOT NULL, status text NOT NULL, instance_id text,
  finished_ms bigint, doc text NOT NULL
);
CREATE INDEX tollgate_turns_running ON ${s}.tollgate_turns (status) WHERE status = 'running';
CREATE INDEX tollgate_turns_finished ON ${s}.tollgate_turns (finished_ms) WHERE finished_ms IS NOT NULL;
CREATE TABLE ${s}.tollgate_events (turn_id text NOT NULL, seq integer NOT NULL, doc text NOT NULL, PRIMARY KEY (turn_id, seq));
CREATE TABLE ${s}.tollgate_instances (instance_id text PRIMARY KEY, expires_at timestamptz NOT NULL);
ALTER TABLE ${s}.tollgate_sessions ADD COLUMN updated_at text COLLATE "C";
ALTER TABLE ${s}.tollgate_turns ADD COLUMN created_at text COLLATE "C";
CREATE INDEX tollgate_sessions_by_owner ON ${s}.tollgate_sessions (owner, updated_at DESC, session_id COLLATE "C" DESC);
CREATE INDEX tollgate_turns_by_owner ON ${s}.tollgate_turns (owner, created_at DESC, turn_id COLLATE "C" DESC);
CREATE TABLE ${s}.tollgate_checkpoints (turn_id text PRIMARY KEY, seq integer NOT NULL, doc text NOT NULL);
CREATE TABLE ${s}.tollgate_idempotency (
  owner text NOT NULL, idem_key text NOT NULL, turn_id text NOT NULL, fingerprint text NOT NULL, expires_ms bigint NOT NULL,
  PRIMARY KEY (owner, idem_key)
);`
}

// Recent: the events of turns finished longer ago than store.event_retention_ms are pruned at start.
const AT = new Date(Date.now() - 60_000).toISOString()
const DONE_AT = new Date(Date.now() - 59_000).toISOString()

/**
 * acme/alice's session chat-1 with one finished turn and its events, as the old code wrote them (no
 * tenant anywhere; each streamed piece a row of its own, before delta runs).
 */
const OLD = {
  session: {
    session_id: 'chat-1', owner: 'acme/alice', agent: 'default', created_at: AT, updated_at: DONE_AT, turn_ids: ['turn_old'],
    history: [{ role: 'user', content: 'old question' }, { role: 'assistant', content: 'old answer' }], always_allowed: []
  },
  turn: {
    turn_id: 'turn_old', session_id: 'chat-1', agent: 'default', owner: 'acme/alice', status: 'completed', created_at: AT, updated_at: DONE_AT,
    iterations: 1, tool_calls: [], approvals: [], pending_approvals: [], last_seq: 4, final_text: 'old answer'
  },
  events: [
    { turn_id: 'turn_old', session_id: 'chat-1', seq: 1, ts: AT, event: { kind: 'turn.started', session_id: 'chat-1', agent: 'default' } },
    { turn_id: 'turn_old', session_id: 'chat-1', seq: 2, ts: DONE_AT, event: { kind: 'text.delta', text: 'old ' } },
    { turn_id: 'turn_old', session_id: 'chat-1', seq: 3, ts: DONE_AT, event: { kind: 'text.delta', text: 'answer' } },
    { turn_id: 'turn_old', session_id: 'chat-1', seq: 4, ts: DONE_AT, event: { kind: 'turn.completed', final_text: 'old answer' } }
  ]
}

function oldSqliteStore (path: string): void {
  const db = new Database(path)
  try {
    db.exec(SQLITE_SCHEMA_3)
    db.prepare('INSERT INTO tollgate_sessions (session_id, owner, doc, updated_at) VALUES (?, ?, ?, ?)')
      .run('chat-1', 'acme/alice', JSON.stringify(OLD.session), DONE_AT)
    db.prepare(`INSERT INTO tollgate_turns (turn_id, session_id, owner, status, instance_id, finished_ms, doc, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)`).run('turn_old', 'chat-1', 'acme/alice', 'completed', 'inst_old', Date.parse(DONE_AT), JSON.stringify(OLD.turn), AT)
    for (const e of OLD.events) db.prepare('INSERT INTO tollgate_events (turn_id, seq, doc) VALUES (?, ?, ?)').run(e.turn_id, e.seq, JSON.stringify(e))
  } finally {
    db.close()
  }
}

async function oldPostgresStore (schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    const s = `"${schema}"`
    await client.query(postgresBefore(s))
    await client.query(`INSERT INTO ${s}.tollgate_sessions (session_id, owner, doc, updated_at) VALUES ($1, $2, $3, $4)`,
      ['chat-1', 'acme/alice', JSON.stringify(OLD.session), DONE_AT])
    await client.query(`INSERT INTO ${s}.tollgate_turns (turn_id, session_id, owner, status, instance_id, finished_ms, doc, created_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, ['turn_old', 'chat-1', 'acme/alice', 'completed', 'inst_old', Date.parse(DONE_AT), JSON.stringify(OLD.turn), AT])
    for (const e of OLD.events) {
      await client.query(`INSERT INTO ${s}.tollgate_events (turn_id, seq, doc) VALUES ($1, $2, $3)`, [e.turn_id, e.seq, JSON.stringify(e)])
    }
  } finally {
    await client.end()
  }
}

function lastUserText (request: RecordedRequest): string {
  return request.body.messages.filter((m) => m.role === 'user').at(-1)?.content ?? ''
}

async function userHistory (g: TestGateway, token: string): Promise<string[]> {
  const res = await g.http('GET', '/v1/sessions/chat-1', undefined, bearer(token))
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return (res.body.history as Array<{ role: string, content: string }>).filter((m) => m.role === 'user').map((m) => m.content)
}

async function checkOldStoreKeepsWorking (t: TestContext, store: Record<string, unknown>): Promise<void> {
  const provider: FakeProvider = await startFakeProvider()
  t.after(() => provider.close())
  const open = async (): Promise<TestGateway> => await startGateway({ provider, overrides: { ...jwtAuth(), store } })
  const acme = await mintToken({ tenant: 'acme', sub: 'alice' })
  const globex = await mintToken({ tenant: 'globex', sub: 'alice' })
  provider.enqueue((r) => ({ text: `re: ${lastUserText(r)}` }), (r) => ({ text: `re: ${lastUserText(r)}` }))

  const g = await open()
  try {
    const listed = await g.http('GET', '/v1/sessions', undefined, bearer(acme))
    assert.deepEqual(listed.body.items.map((s: { session_id: string, updated_at: string }) => [s.session_id, s.updated_at]), [['chat-1', DONE_AT]])
    const replay = await g.http('GET', '/v1/turns/turn_old/events', undefined, bearer(acme))
    assert.deepEqual(replay.body.events, OLD.events.map(({ session_id: _s, ...wire }) => wire), 'stored events replay, nothing internal on the wire')
    const fromMiddle = await g.http('GET', '/v1/turns/turn_old/events?after_seq=2', undefined, bearer(acme))
    assert.deepEqual(fromMiddle.body.events.map((e: { seq: number }) => e.seq), [3, 4], 'the old delta rows read as single events')
    const next = await g.http('POST', '/v1/turns?wait=true', { session_id: 'chat-1', message: 'new question' }, bearer(acme))
    assert.deepEqual([next.status, next.body.final_text], [200, 're: new question'])
    const asked = provider.requests.find((r) => lastUserText(r) === 'new question')
    assert.deepEqual(asked?.body.messages.filter((m) => m.role !== 'system').map((m) => m.content), ['old question', 'old answer', 'new question'])
    const other = await g.http('POST', '/v1/turns?wait=true', { session_id: 'chat-1', message: 'globex question' }, bearer(globex))
    assert.deepEqual([other.status, other.body.final_text], [200, 're: globex question'], 'the migrated id does not block another tenant')
  } finally {
    await g.close()
  }

  const again = await open()
  try {
    assert.deepEqual(await userHistory(again, acme), ['old question', 'new question'])
    assert.deepEqual(await userHistory(again, globex), ['globex question'])
  } finally {
    await again.close()
  }
}

test('sqlite: a schema-3 file opens with sessions keyed by tenant, and its sessions and turns keep working', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-migration-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'tollgate.db')
  oldSqliteStore(path)
  await checkOldStoreKeepsWorking(t, { kind: 'sqlite', sqlite: { path } })
  const db = new Database(path, { readonly: true })
  try {
    assert.equal(db.pragma('user_version', { simple: true }), 8)
    assert.deepEqual(db.prepare('SELECT seq, last_seq FROM tollgate_events WHERE turn_id = \'turn_old\' ORDER BY seq').all(),
      [1, 2, 3, 4].map((seq) => ({ seq, last_seq: null })), 'rows written before delta runs stay as they were')
    const keyed = db.prepare('SELECT name, pk FROM pragma_table_info(\'tollgate_sessions\') WHERE pk > 0 ORDER BY pk').all()
    assert.deepEqual(keyed, [{ name: 'tenant', pk: 1 }, { name: 'session_id', pk: 2 }])
  } finally {
    db.close()
  }
})

test('postgres: tables made before sessions were per tenant open keyed by tenant, and their sessions and turns keep working', async (t) => {
  const schema = scratchSchema(deferrer(t))
  await oldPostgresStore(schema)
  await checkOldStoreKeepsWorking(t, { kind: 'postgres', postgres: { url: PG_URL, schema } })
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    const { rows } = await client.query<{ def: string }>(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE conrelid = '"${schema}".tollgate_sessions'::regclass AND contype = 'p'`)
    assert.deepEqual(rows.map((r) => r.def), ['PRIMARY KEY (tenant, session_id)'])
  } finally {
    await client.end()
  }
})
