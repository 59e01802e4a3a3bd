import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/core/config.js'
import { buildServer } from '../../src/app/server.js'

test('a start that fails part-way releases what it opened, so the next start on the same SQLite file succeeds', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-startup-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const base = { log: { level: 'silent' }, workspace: { dir }, store: { kind: 'sqlite', sqlite: { path: join(dir, 'db', 'tollgate.db') } } }
  const broken = loadConfig({ env: {}, overrides: { ...base, tools: { http: { allow_hosts: ['10.0.0.0/99'] } } } })
  await assert.rejects(buildServer({ config: broken, env: {} }))
  const gateway = await buildServer({ config: loadConfig({ env: {}, overrides: base }), env: {} })
  await gateway.close()
})
