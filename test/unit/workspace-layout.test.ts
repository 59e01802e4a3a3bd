import { test } from 'node:test'
import assert from 'node:assert/strict'
import { promises as fs } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { SandboxIdentities } from '../../src/tools/builtin/sandbox-identity.js'
import { WorkspaceLayout, workspaceSlug } from '../../src/tools/builtin/workspace-layout.js'

const NOBODY = new SandboxIdentities(null)
/** A range of one id: every tenant's folders belong to 65534. */
const ONE_SANDBOX_USER = new SandboxIdentities({ firstUid: 65534, firstGid: 65534, count: 1 })

async function scratch (t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'tollgate-layout-')))
  t.after(async () => { await fs.rm(dir, { recursive: true, force: true }) })
  return dir
}

test('a tenant slug keeps a readable prefix and adds a hash of the whole name', () => {
  assert.match(workspaceSlug('acme'), /^acme-[0-9a-f]{16}$/)
  assert.match(workspaceSlug('Acme Corp/EU'), /^Acme_Corp_EU-[0-9a-f]{16}$/)
})

test('hostile tenant names become plain folder names that cannot escape, hide or pose as options', () => {
  const names = ['.', '..', '', '../../etc', '.hidden', '-rf', 'a\u0000b', 'line\nbreak', '\u202eevil', 'x'.repeat(5000), 'ünïcödé']
  for (const name of names) {
    const slug = workspaceSlug(name)
    assert.match(slug, /^[A-Za-z0-9][A-Za-z0-9_-]{0,39}-[0-9a-f]{16}$/, `${JSON.stringify(name.slice(0, 20))} → ${slug}`)
  }
})

test('tenant names that sanitise alike still get different folders', () => {
  const names = ['a.b', 'a_b', 'a/b', 'a b', 'A.B', 'x'.repeat(60), `${'x'.repeat(60)}y`]
  assert.equal(new Set(names.map(workspaceSlug)).size, names.length)
})

test('each tenant gets its own private folder under the root', async (t) => {
  const root = await scratch(t)
  const layout = new WorkspaceLayout({ root, perSession: false, identities: NOBODY })
  const acme = layout.dirFor('acme', 'ses_1')
  assert.equal(acme, path.join(root, workspaceSlug('acme')))
  assert.equal(layout.dirFor('acme', 'ses_2'), acme)
  assert.notEqual(layout.dirFor('globex', 'ses_1'), acme)
  assert.equal((await fs.stat(acme)).mode & 0o777, 0o700)
})

test('with per-session folders each session of a tenant gets its own folder inside the tenant\'s', async (t) => {
  const root = await scratch(t)
  const layout = new WorkspaceLayout({ root, perSession: true, identities: NOBODY })
  const one = layout.dirFor('acme', 'ses_1')
  assert.equal(one, path.join(root, workspaceSlug('acme'), workspaceSlug('ses_1')))
  assert.notEqual(layout.dirFor('acme', 'ses_2'), one)
  assert.equal((await fs.stat(one)).isDirectory(), true)
})

test('with per-session folders the same session id in two tenants gets two folders, each inside its tenant\'s', async (t) => {
  const root = await scratch(t)
  const layout = new WorkspaceLayout({ root, perSession: true, identities: NOBODY })
  const acme = layout.dirFor('acme', 'chat-1')
  const globex = layout.dirFor('globex', 'chat-1')
  assert.notEqual(acme, globex)
  assert.equal(path.dirname(acme), layout.tenantDir('acme'))
  assert.equal(path.dirname(globex), layout.tenantDir('globex'))
})

test('the layout creates a missing root and answers canonical paths through a symlinked one', async (t) => {
  const base = await scratch(t)
  await fs.mkdir(path.join(base, 'real'))
  await fs.symlink(path.join(base, 'real'), path.join(base, 'link'))
  const layout = new WorkspaceLayout({ root: path.join(base, 'link', 'nested'), perSession: false, identities: NOBODY })
  assert.equal(layout.root, path.join(base, 'real', 'nested'))
  assert.equal(layout.tenantDir('acme'), path.join(base, 'real', 'nested', workspaceSlug('acme')))
})

test('the layout refuses a relative root', () => {
  assert.throws(() => new WorkspaceLayout({ root: 'relative/ws', perSession: false, identities: NOBODY }), /absolute/)
})

const ROOT_ONLY = { skip: process.getuid?.() !== 0 ? 'chown needs root' : false }

test('an owner is given the tenant folder the layout makes, private to it, and may pass through the root', ROOT_ONLY, async (t) => {
  const root = await scratch(t)
  await fs.chmod(root, 0o700)
  const layout = new WorkspaceLayout({ root, perSession: false, identities: ONE_SANDBOX_USER })
  const st = await fs.stat(layout.dirFor('acme', 'ses_1'))
  assert.deepEqual([st.uid, st.gid, st.mode & 0o777], [65534, 65534, 0o700])
  assert.equal((await fs.stat(root)).mode & 0o777, 0o701)
})

test('with per-session folders the owner gets each session\'s folder and the tenant\'s folder stays the gateway\'s, passable only', ROOT_ONLY, async (t) => {
  const root = await scratch(t)
  const layout = new WorkspaceLayout({ root, perSession: true, identities: ONE_SANDBOX_USER })
  const session = await fs.stat(layout.dirFor('acme', 'ses_1'))
  const tenant = await fs.stat(layout.tenantDir('acme'))
  assert.deepEqual([session.uid, session.gid, session.mode & 0o777], [65534, 65534, 0o700])
  assert.deepEqual([tenant.uid, tenant.mode & 0o777], [process.getuid?.(), 0o711])
})

test('a symlink planted under a session folder\'s name is refused, and what it points to is not given away', ROOT_ONLY, async (t) => {
  const root = await scratch(t)
  const outside = await scratch(t)
  const layout = new WorkspaceLayout({ root, perSession: true, identities: ONE_SANDBOX_USER })
  await fs.symlink(outside, path.join(layout.tenantDir('acme'), workspaceSlug('ses_1')))
  assert.throws(() => layout.dirFor('acme', 'ses_1'), { name: 'WorkspaceError', message: 'workspace directory is not a directory' })
  assert.equal((await fs.stat(outside)).uid, 0)
})

test('a tenant folder removed while the gateway runs is made again (private) at the tenant\'s next turn', async (t) => {
  const root = await scratch(t)
  const layout = new WorkspaceLayout({ root, perSession: false, identities: NOBODY })
  const acme = layout.dirFor('acme', 'ses_1')
  await fs.rm(acme, { recursive: true })
  assert.equal(layout.dirFor('acme', 'ses_2'), acme)
  const made = await fs.stat(acme)
  assert.equal(made.isDirectory(), true)
  assert.equal(made.mode & 0o777, 0o700)
})
