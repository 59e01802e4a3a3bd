import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../../src/core/config.js'
import { connectionUrl } from '../../src/core/connection-url.js'

test('the embedded default store is SQLite under ./data with an in-process bus', () => {
  const config = loadConfig({ env: {} })
  assert.equal(config.store.kind, 'sqlite')
  assert.equal(config.store.sqlite.path, './data/tollgate.db')
  assert.equal(config.store.event_log, true)
  assert.equal(config.bus.kind, 'memory')
  assert.equal(config.cluster.instance_id, undefined)
})

test('TOLLGATE_SQLITE_PATH moves the embedded store\'s file and outranks the config file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-config-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'tollgate.json')
  await writeFile(file, JSON.stringify({ store: { sqlite: { path: '/from/the/file.db' } } }))
  assert.equal(loadConfig({ file, env: {} }).store.sqlite.path, '/from/the/file.db')
  const config = loadConfig({ file, env: { TOLLGATE_SQLITE_PATH: '/data/tollgate.db' } })
  assert.deepEqual([config.store.kind, config.store.sqlite.path], ['sqlite', '/data/tollgate.db'])
})

test('an unknown store kind is a configuration error', () => {
  assert.throws(() => loadConfig({ env: {}, overrides: { store: { kind: 'mongodb' } } }), ConfigError)
})

test('a PostgreSQL schema name that is not a plain identifier is a configuration error', () => {
  assert.throws(() => loadConfig({ env: {}, overrides: { store: { kind: 'postgres', postgres: { schema: 'a; drop' } } } }), /schema/)
})

test('a lease shorter than one second is a configuration error', () => {
  assert.throws(() => loadConfig({ env: {}, overrides: { cluster: { lease_ms: 10 } } }), /lease_ms/)
})

test('a connection URL comes from the environment variable url_env names, which wins over url', () => {
  const section = { url: 'postgres://127.0.0.1/plain', url_env: 'TG_DB' }
  assert.equal(connectionUrl(section, { TG_DB: 'postgres://user:secret@db/prod' }, 'store.postgres'), 'postgres://user:secret@db/prod')
  assert.equal(connectionUrl({ url: 'redis://127.0.0.1:6379' }, {}, 'bus.redis'), 'redis://127.0.0.1:6379')
})

test('a url_env naming an unset variable fails with a message naming the variable, not a value', () => {
  assert.throws(() => connectionUrl({ url: 'x', url_env: 'TG_DB' }, {}, 'store.postgres'), /store\.postgres\.url_env names TG_DB, which is not set/)
})
