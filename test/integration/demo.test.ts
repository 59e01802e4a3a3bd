import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { loadConfig } from '../../src/core/config.js'
import { buildServer } from '../../src/app/server.js'

const run = promisify(execFile)

test('the embedded defaults run the demo provider end to end, with an approval answered by the WS demo script', async (t) => {
  const workspace = await mkdtemp(join(tmpdir(), 'tollgate-demo-'))
  const config = loadConfig({ env: {}, overrides: { server: { port: 0 }, log: { level: 'silent' }, workspace: { dir: workspace }, store: { sqlite: { path: join(workspace, '.data', 'tollgate.db') } } } })
  assert.equal(config.providers[config.agents[config.default_agent]?.provider ?? '']?.kind, 'demo')
  const gateway = await buildServer({ config, env: {} })
  const url = await gateway.app.listen({ host: '127.0.0.1', port: 0 })
  t.after(async () => {
    await gateway.close()
    await rm(workspace, { recursive: true, force: true })
  })
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'scripts/ws-demo.ts', 'buy', 'milk'], { env: { ...process.env, TOLLGATE_URL: url }, timeout: 20_000 })
  assert.match(stdout, /approval\.requested file_write \(path: notes\/demo\.txt, content: buy milk/)
  assert.match(stdout, /approval\.resolved yes by ws:/)
  assert.match(stdout, /tool_result file_write ok: Wrote 9 bytes to notes\/demo\.txt/)
  assert.match(stdout, /approval\.requested shell \(command: ls -l notes\)/)
  assert.match(stdout, /tool_result shell ok/)
  assert.match(stdout, /turn\.completed/)
  assert.match(stdout, /demo provider — scripted, not an LLM/)
  assert.equal(await readFile(join(gateway.workspaces.tenantDir('local'), 'notes', 'demo.txt'), 'utf8'), 'buy milk\n')
})

test('answering no in the demo leaves the workspace untouched', async (t) => {
  const workspace = await mkdtemp(join(tmpdir(), 'tollgate-demo-'))
  const config = loadConfig({ env: {}, overrides: { server: { port: 0 }, log: { level: 'silent' }, workspace: { dir: workspace }, store: { sqlite: { path: join(workspace, '.data', 'tollgate.db') } } } })
  const gateway = await buildServer({ config, env: {} })
  const url = await gateway.app.listen({ host: '127.0.0.1', port: 0 })
  t.after(async () => {
    await gateway.close()
    await rm(workspace, { recursive: true, force: true })
  })
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'scripts/ws-demo.ts', '--answer', 'no', 'hello'], { env: { ...process.env, TOLLGATE_URL: url }, timeout: 20_000 })
  assert.match(stdout, /tool_result file_write denied: Denied by user\./)
  assert.match(stdout, /turn\.completed/)
  await assert.rejects(readFile(join(gateway.workspaces.tenantDir('local'), 'notes', 'demo.txt')), { code: 'ENOENT' })
})
