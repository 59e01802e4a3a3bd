import { test } from 'node:test'
import assert from 'node:assert/strict'
import { promises as fs } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { SandboxIdentities, unmappedIds } from '../../src/tools/builtin/sandbox-identity.js'
import { WorkspaceLayout } from '../../src/tools/builtin/workspace-layout.js'

const RANGE = { firstUid: 1_879_048_192, firstGid: 1_900_000_000, count: 16_777_216 }

test('a tenant gets the same ids on every start, inside the range, at the same offset for uid and gid', () => {
  const a = new SandboxIdentities(RANGE).ownerFor('acme')
  const b = new SandboxIdentities(RANGE).ownerFor('acme')
  assert.deepEqual(a, b)
  const uid = a?.uid ?? -1
  const gid = a?.gid ?? -1
  assert.ok(uid >= RANGE.firstUid && uid < RANGE.firstUid + RANGE.count)
  assert.equal(gid - RANGE.firstGid, uid - RANGE.firstUid)
})

test('a workspace layout gives a tenant\'s folder to the tenant\'s ids', { skip: process.getuid?.() !== 0 ? 'chown needs root' : false }, async (t) => {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'tollgate-identity-'))
  t.after(async () => { await fs.rm(root, { recursive: true, force: true }) })
  const identities = new SandboxIdentities(RANGE)
  const layout = new WorkspaceLayout({ root, perSession: false, identities })
  assert.deepEqual(layout.ownerFor('acme'), identities.ownerFor('acme'))
  const st = await fs.stat(layout.dirFor('acme', 'ses_1'))
  assert.deepEqual([st.uid, st.gid], [identities.ownerFor('acme')?.uid, identities.ownerFor('acme')?.gid])
})

test('different tenants get different ids', () => {
  const identities = new SandboxIdentities(RANGE)
  const uids = new Set(Array.from({ length: 200 }, (_, i) => identities.ownerFor(`tenant-${i}`)?.uid))
  assert.equal(uids.size, 200)
})

test('a tenant keeps its ids when asked again, past the tenants kept at hand too', () => {
  const identities = new SandboxIdentities(RANGE)
  const first = identities.ownerFor('acme')
  for (let i = 0; i < 5000; i++) identities.ownerFor(`tenant-${i}`)
  assert.deepEqual(identities.ownerFor('acme'), first)
  assert.deepEqual(identities.ownerFor('acme'), new SandboxIdentities(RANGE).ownerFor('acme'))
  assert.ok(Object.isFrozen(first), 'one object is handed to every turn of the tenant: nobody may change it')
})

test('a range of one id gives every tenant the same one', () => {
  const identities = new SandboxIdentities({ firstUid: 65534, firstGid: 65534, count: 1 })
  assert.deepEqual([identities.ownerFor('acme'), identities.ownerFor('globex')], [{ uid: 65534, gid: 65534 }, { uid: 65534, gid: 65534 }])
})

test('without a range nobody changes user, and the probe runs as the first ids of a range', () => {
  assert.equal(new SandboxIdentities(null).ownerFor('acme'), null)
  assert.equal(new SandboxIdentities(null).probeOwner(), null)
  assert.deepEqual(new SandboxIdentities(RANGE).probeOwner(), { uid: RANGE.firstUid, gid: RANGE.firstGid })
})

async function idMaps (t: { after: (fn: () => Promise<void>) => void }, uidMap: string, gidMap: string): Promise<[string, string]> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tollgate-idmap-'))
  t.after(async () => { await fs.rm(dir, { recursive: true, force: true }) })
  await fs.writeFile(path.join(dir, 'uid_map'), uidMap)
  await fs.writeFile(path.join(dir, 'gid_map'), gidMap)
  return [path.join(dir, 'uid_map'), path.join(dir, 'gid_map')]
}

test('every id of the range exists in the initial user namespace', async (t) => {
  const [uidMap, gidMap] = await idMaps(t, '         0          0 4294967295\n', '         0          0 4294967295\n')
  assert.equal(unmappedIds(RANGE, uidMap, gidMap), null)
})

test('a container that maps 65536 ids has none of the default range, and says which', async (t) => {
  const [uidMap, gidMap] = await idMaps(t, '0 100000 65536\n', '0 100000 65536\n')
  assert.equal(unmappedIds(RANGE, uidMap, gidMap), `uids 1879048192–1895825407 are not all mapped in this user namespace (${uidMap})`)
  assert.equal(unmappedIds({ firstUid: 20000, firstGid: 20000, count: 40000 }, uidMap, gidMap), null)
})

test('a range spread over adjacent extents of the map is covered; one with a hole is not', async (t) => {
  const [uidMap, gidMap] = await idMaps(t, '1000 1000 1000\n0 0 1000\n', '0 0 1200\n2000 2000 1000\n')
  const range = { firstUid: 500, firstGid: 500, count: 1000 }
  assert.equal(unmappedIds({ ...range, firstGid: 2000 }, uidMap, gidMap), null)
  assert.equal(unmappedIds(range, uidMap, gidMap), `gids 500–1499 are not all mapped in this user namespace (${gidMap})`)
})
