/**
 * Per-tenant workspaces seen through the file tools: two JWT principals of different tenants, each
 * working in their own folder, neither able to name the other's. (The shell's view of the same
 * folders is tested under the sandbox in shell-sandbox.test.ts.)
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { deepMerge } from '../../src/core/config.js'
import { workspaceSlug } from '../../src/tools/builtin/workspace-layout.js'
import type { RecordedRequest } from '../helpers/fake-provider.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'

async function gateway (t: TestContext, overrides: unknown = {}): Promise<TestGateway> {
  const g = await startGateway({
    overrides: deepMerge(jwtAuth({ allow_query_token: false }), deepMerge({
      agents: { default: { tools: ['file_read', 'file_write', 'delegate'] } },
      risk_profiles: { default: { level: 'full' } }
    }, overrides))
  })
  t.after(() => g.close())
  return g
}

async function turn (g: TestGateway, token: string, body: Record<string, unknown>): Promise<any> {
  const res = await g.http('POST', '/v1/turns?wait=true', body, bearer(token))
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body
}

function toolResults (request: RecordedRequest | undefined): Array<string | null> {
  return (request?.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => m.content)
}

test('tenant B cannot read tenant A\'s file with file_read, by relative or absolute path', async (t) => {
  const g = await gateway(t)
  const a = await mintToken({ tenant: 'acme', sub: 'alice' })
  const b = await mintToken({ tenant: 'globex', sub: 'bob' })
  g.provider.enqueue({ toolCalls: [{ id: 'w', name: 'file_write', arguments: { path: 'secret.txt', content: 'acme secret plans' } }] }, { text: 'saved' })
  await turn(g, a, { message: 'save it' })
  const aFile = join(g.tenantWorkspace('acme'), 'secret.txt')
  assert.equal(await readFile(aFile, 'utf8'), 'acme secret plans')

  g.provider.enqueue({
    toolCalls: [
      { id: 'r1', name: 'file_read', arguments: { path: `../${workspaceSlug('acme')}/secret.txt` } },
      { id: 'r2', name: 'file_read', arguments: { path: aFile } },
      { id: 'r3', name: 'file_read', arguments: { path: 'secret.txt' } }
    ]
  }, { text: 'nothing' })
  await turn(g, b, { message: 'peek' })
  assert.deepEqual(toolResults(g.provider.requests.at(-1)), [
    `Error: path is outside the workspace: ../${workspaceSlug('acme')}/secret.txt`,
    `Error: path is outside the workspace: ${aFile}`,
    'Error: no such file or directory'
  ])
  assert.equal(JSON.stringify(g.provider.requests.slice(2)).includes('acme secret plans'), false)
})

test('the same relative path is a different file for each tenant', async (t) => {
  const g = await gateway(t)
  for (const [tenant, text] of [['acme', 'for acme'], ['globex', 'for globex']] as const) {
    g.provider.enqueue({ toolCalls: [{ id: 'w', name: 'file_write', arguments: { path: 'notes/n.txt', content: text } }] }, { text: 'ok' })
    await turn(g, await mintToken({ tenant }), { message: 'write' })
  }
  assert.equal(await readFile(join(g.tenantWorkspace('acme'), 'notes', 'n.txt'), 'utf8'), 'for acme')
  assert.equal(await readFile(join(g.tenantWorkspace('globex'), 'notes', 'n.txt'), 'utf8'), 'for globex')
  assert.deepEqual([g.tenantWorkspace('acme'), g.tenantWorkspace('globex')].map((d) => relative(g.workspaceRoot, d)), [workspaceSlug('acme'), workspaceSlug('globex')])
})

test('two principals of one tenant share the tenant\'s folder', async (t) => {
  const g = await gateway(t)
  await writeFile(join(g.tenantWorkspace('acme'), 'shared.txt'), 'team notes')
  g.provider.enqueue({ toolCalls: [{ id: 'r', name: 'file_read', arguments: { path: 'shared.txt' } }] }, { text: 'ok' })
  await turn(g, await mintToken({ tenant: 'acme', sub: 'bob' }), { message: 'read' })
  assert.deepEqual(toolResults(g.provider.requests.at(-1)), ['team notes'])
})

test('a turn that touches no file makes no folder; its first file tool makes the tenant\'s', async (t) => {
  const g = await gateway(t)
  const token = await mintToken({ tenant: 'initech' })
  const folder = join(g.workspaceRoot, workspaceSlug('initech'))
  g.provider.enqueue({ text: 'no tools needed' })
  await turn(g, token, { message: 'hello' })
  await assert.rejects(stat(folder), { code: 'ENOENT' })
  g.provider.enqueue({ toolCalls: [{ id: 'w', name: 'file_write', arguments: { path: 'a.txt', content: 'first' } }] }, { text: 'ok' })
  await turn(g, token, { message: 'write' })
  assert.equal(await readFile(join(folder, 'a.txt'), 'utf8'), 'first')
})

test('with per-session folders a session\'s tools do not see another session\'s files', async (t) => {
  const g = await gateway(t, { workspace: { per_session: true } })
  const a = await mintToken({ tenant: 'acme' })
  g.provider.enqueue({ toolCalls: [{ id: 'w', name: 'file_write', arguments: { path: 'draft.txt', content: 'session one' } }] }, { text: 'ok' })
  const first = await turn(g, a, { message: 'write', session_id: 'ses_one' })
  g.provider.enqueue({ toolCalls: [{ id: 'r', name: 'file_read', arguments: { path: 'draft.txt' } }] }, { text: 'ok' })
  await turn(g, a, { message: 'read', session_id: 'ses_two' })
  assert.deepEqual(toolResults(g.provider.requests.at(-1)), ['Error: no such file or directory'])
  g.provider.enqueue({ toolCalls: [{ id: 'r', name: 'file_read', arguments: { path: 'draft.txt' } }] }, { text: 'ok' })
  await turn(g, a, { message: 'read again', session_id: first.session_id })
  // The session's history also carries its earlier write: the last result is this turn's read.
  assert.equal(toolResults(g.provider.requests.at(-1)).at(-1), 'session one')
  assert.equal((await stat(join(g.tenantWorkspace('acme'), workspaceSlug('ses_one'), 'draft.txt'))).isFile(), true)
})

test('a delegated sub-turn works in its parent turn\'s tenant folder', async (t) => {
  const g = await gateway(t)
  await writeFile(join(g.tenantWorkspace('acme'), 'a.txt'), 'acme says hi')
  await writeFile(join(g.tenantWorkspace('globex'), 'a.txt'), 'globex says hi')
  g.provider.enqueue(
    { toolCalls: [{ id: 'p1', name: 'delegate', arguments: { task: 'Read a.txt.', tools: ['file_read'] } }] },
    { toolCalls: [{ id: 's1', name: 'file_read', arguments: { path: 'a.txt' } }] },
    { text: 'read it' },
    { text: 'done' }
  )
  await turn(g, await mintToken({ tenant: 'globex' }), { message: 'delegate' })
  assert.deepEqual(toolResults(g.provider.requests[2]), ['globex says hi'])
})

test('file_write gives what it creates in a workspace to the tenant\'s sandbox user under a root gateway', { skip: process.getuid?.() !== 0 ? 'only a root gateway hands its workspaces to another uid' : false }, async (t) => {
  const g = await gateway(t)
  if (!g.gateway.turns.catalog.has('shell')) {
    t.skip('the sandbox does not work here, so workspaces keep the gateway\'s uid')
    return
  }
  g.provider.enqueue({ toolCalls: [{ id: 'w', name: 'file_write', arguments: { path: 'deep/er/f.txt', content: 'x' } }] }, { text: 'ok' })
  await turn(g, await mintToken({ tenant: 'acme' }), { message: 'write' })
  const dir = g.tenantWorkspace('acme')
  const owner = g.gateway.workspaces.ownerFor('acme')
  assert.ok(owner !== null && owner.uid !== 0)
  for (const p of [dir, join(dir, 'deep'), join(dir, 'deep', 'er'), join(dir, 'deep', 'er', 'f.txt')]) {
    const st = await stat(p)
    assert.deepEqual([st.uid, st.gid], [owner.uid, owner.gid], p)
  }
})
