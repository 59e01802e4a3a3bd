import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { verifyAuditChain } from '../../client/audit-verify.js'
import { deepMerge } from '../../src/core/config.js'
import type { AuditLedger } from '../../src/store/audit-chain.js'
import { PostgresAuditLedger } from '../../src/store/audit-postgres.js'
import { SqliteAuditLedger } from '../../src/store/audit-sqlite.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { PG_URL, scratchSchema } from '../helpers/services.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'

const run = promisify(execFile)
type Defer = (fn: () => Promise<void>) => void
type After = { after: (fn: () => Promise<void>) => void }

async function tempDir (t: After): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-audit-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

/** `npx tollgate audit verify FILE`, as a user runs it. */
async function verifyWithCli (file: string): Promise<{ code: number, stdout: string, stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['bin/tollgate.js', 'audit', 'verify', file])
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code: number, stdout: string, stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

async function gatewayWithRules (t: After, overrides: unknown = {}): Promise<TestGateway> {
  const g = await startGateway({
    overrides: deepMerge({
      agents: { default: { tools: ['shell', 'file_write'] } },
      risk_profiles: { default: { permissions: { allow: ['shell(ls:*)', 'shell(git status)', 'file_write(notes/**)'], deny: ['shell(rm:*)'] } } }
    }, overrides)
  })
  t.after(async () => { await g.close() })
  return g
}

test('the audit export of rule-decided turns verifies with tollgate audit verify, and one changed decision breaks it', async (t) => {
  const g = await gatewayWithRules(t)
  g.provider.enqueue({
    toolCalls: [
      { id: 'c1', name: 'shell', arguments: { command: 'ls -la' } },
      { id: 'c2', name: 'shell', arguments: { command: 'ls && rm -f keep.txt' } },
      { id: 'c3', name: 'shell', arguments: { command: 'ls; touch p' } },
      { id: 'c4', name: 'file_write', arguments: { path: 'notes/a.txt', content: 'a' } }
    ]
  }, { text: 'done' })
  const turn = await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  assert.equal(turn.status, 200)
  const res = await g.http('GET', '/v1/audit?format=jsonl')
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type') ?? '', /application\/x-ndjson/)
  const text = typeof res.body === 'string' ? res.body : ''
  const entries = text.trim().split('\n').map((line) => JSON.parse(line) as { seq: number, kind: string, data: Record<string, unknown> })
  assert.deepEqual(entries.map((e) => e.seq), entries.map((_e, i) => i + 1))
  const kinds = entries.map((e) => `${e.kind}:${String(e.data.call_id)}:${String(e.data.outcome ?? e.data.decision ?? e.data.status)}`)
  const callIds = (turn.body.tool_calls as Array<{ call_id: string }>).map((c) => c.call_id)
  assert.deepEqual(kinds.filter((k) => k.startsWith('permission')), [
    `permission:${callIds[0] as string}:allow`, `permission:${callIds[1] as string}:deny`,
    `permission:${callIds[2] as string}:default`, `permission:${callIds[3] as string}:allow`
  ])
  assert.ok(kinds.includes(`approval:${callIds[2] as string}:auto-deny`))
  assert.ok(kinds.includes(`tool_execution:${callIds[0] as string}:ok`))
  const denied = entries.find((e) => e.kind === 'permission' && e.data.outcome === 'deny')
  assert.equal(denied?.data.rule, 'shell(rm:*)')
  assert.ok(denied?.data.policy_version !== undefined)
  const asked = (turn.body.approvals as Array<{ call_id: string, rule?: string, policy_version?: string }>)[0]
  assert.deepEqual([asked?.call_id, asked?.rule, asked?.policy_version], [callIds[2], 'default', denied?.data.policy_version])
  const plan = denied?.data.plan as { commands: Array<{ command: string, outcome: string }> }
  assert.deepEqual(plan.commands.map((c) => [c.command, c.outcome]), [['ls', 'allow'], ['rm -f keep.txt', 'deny']])

  const dir = await tempDir(t)
  const file = join(dir, 'audit.jsonl')
  await writeFile(file, text)
  const good = await verifyWithCli(file)
  assert.equal(good.code, 0, good.stderr)
  assert.match(good.stdout, new RegExp(`chain of ${entries.length} entries verified`))

  const lines = text.trim().split('\n')
  const at = lines.findIndex((line) => line.includes('"outcome":"deny"'))
  lines[at] = (lines[at] as string).replace('"outcome":"deny"', '"outcome":"allow"')
  const tampered = join(dir, 'tampered.jsonl')
  await writeFile(tampered, `${lines.join('\n')}\n`)
  const bad = await verifyWithCli(tampered)
  assert.equal(bad.code, 1)
  assert.equal(bad.stderr.trim(), `${tampered}:${at + 1}: broken chain: hash does not match the entry`)
})

test('a signed tool receipt is chained beside the execution it vouches for', async (t) => {
  const g = await gatewayWithRules(t, { runtime_profiles: { default: { tool_receipts: { enabled: true } } } })
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'shell', arguments: { command: 'ls' } }] }, { text: 'ok' })
  const turn = await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  const callId = (turn.body.tool_calls as Array<{ call_id: string }>)[0]?.call_id
  const lines = String((await g.http('GET', '/v1/audit?format=jsonl')).body).trim().split('\n')
  const entries = lines.map((l) => JSON.parse(l) as { kind: string, data: { call_id: string, receipt?: string } })
  // The receipt is signed as the result settles, just before the execution's record is made.
  assert.deepEqual(entries.map((e) => e.kind), ['permission', 'receipt', 'tool_execution'])
  assert.deepEqual(entries.map((e) => e.data.call_id), [callId, callId, callId])
  assert.match(entries[1]?.data.receipt ?? '', /^tg-receipt-/)
  assert.deepEqual(verifyAuditChain(lines.join('\n')), { ok: true, entries: 3 })
})

test('a credential in a command is scrubbed from the chained plan and reason', async (t) => {
  const g = await gatewayWithRules(t)
  const token = `ghp_${'A1b2C3d4E5'.repeat(3)}xYz789`
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'shell', arguments: { command: `ls && echo ${token}` } }] }, { text: 'ok' })
  await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  const text = String((await g.http('GET', '/v1/audit?format=jsonl')).body)
  const permission = JSON.parse(text.split('\n')[0] as string) as { kind: string, data: { outcome: string, reason: string } }
  assert.deepEqual([permission.kind, permission.data.outcome], ['permission', 'default'])
  assert.match(permission.data.reason, /`echo ghp_/)
  assert.equal(text.includes(token), false)
})

test('the audit export is paginated by seq', async (t) => {
  const g = await gatewayWithRules(t)
  for (const command of ['ls', 'ls -a', 'ls -l']) {
    g.provider.enqueue({ toolCalls: [{ id: 'c', name: 'shell', arguments: { command } }] }, { text: 'ok' })
    await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  }
  const first = await g.http('GET', '/v1/audit?format=jsonl&limit=2')
  const next = first.headers.get('tollgate-audit-next')
  assert.equal(next, '2')
  const second = await g.http('GET', `/v1/audit?format=jsonl&after=${next ?? ''}&limit=1000`)
  const seqs = (String(second.body)).trim().split('\n').map((l) => (JSON.parse(l) as { seq: number }).seq)
  assert.equal(seqs[0], 3)
  assert.equal(second.headers.get('tollgate-audit-next'), null)
  assert.deepEqual(verifyAuditChain(String(first.body) + String(second.body)), { ok: true, entries: 2 + seqs.length })
  const invalid = await g.http('GET', '/v1/audit?format=csv')
  assert.equal(invalid.status, 400)
})

test('the audit export holds the caller\'s tenant\'s chain only', async (t) => {
  const g = await gatewayWithRules(t, jwtAuth())
  const acme = bearer(await mintToken({ tenant: 'acme', sub: 'alice' }))
  const globex = bearer(await mintToken({ tenant: 'globex', sub: 'bob' }))
  g.provider.enqueue({ toolCalls: [{ id: 'c', name: 'shell', arguments: { command: 'ls' } }] }, { text: 'ok' })
  const turn = await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false }, acme)
  assert.equal(turn.status, 200)
  const own = String((await g.http('GET', '/v1/audit?format=jsonl', undefined, acme)).body).trim().split('\n')
  assert.ok(own.length >= 2)
  assert.ok(own.every((line) => (JSON.parse(line) as { tenant: string }).tenant === 'acme'))
  const other = await g.http('GET', '/v1/audit?format=jsonl', undefined, globex)
  assert.equal(other.status, 200)
  assert.equal(other.headers.get('content-length'), '0', 'another tenant has no entries')
  const anonymous = await g.http('GET', '/v1/audit?format=jsonl', undefined, {})
  assert.equal(anonymous.status, 401)
})

async function concurrentWriters (ledgers: [AuditLedger, AuditLedger]): Promise<void> {
  await Promise.all(Array.from({ length: 40 }, async (_v, i) => {
    await (ledgers[i % 2] as AuditLedger).append('acme', { kind: 'approval', data: { n: i } })
  }))
  await (ledgers[0]).append('other', { kind: 'approval', data: { n: -1 } })
  const entries = await ledgers[1].read('acme', 0, 1000)
  assert.equal(entries.length, 40)
  assert.deepEqual(verifyAuditChain(entries.map((e) => JSON.stringify(e)).join('\n')), { ok: true, entries: 40 })
  assert.deepEqual((await ledgers[0].read('other', 0, 10)).map((e) => e.seq), [1], 'each tenant has its own chain')
}

test('sqlite: two writers on one database file keep one unbroken chain per tenant, and rows cannot be changed', async (t) => {
  const path = join(await tempDir(t), 'tollgate.db')
  const a = new SqliteAuditLedger(path)
  const b = new SqliteAuditLedger(path)
  t.after(async () => { await a.close(); await b.close() })
  await concurrentWriters([a, b])
  const Database = (await import('better-sqlite3')).default
  const raw = new Database(path)
  t.after(async () => { raw.close() })
  assert.throws(() => raw.prepare("UPDATE tollgate_audit SET data = '{}' WHERE seq = 1").run(), /append-only/)
  assert.throws(() => raw.prepare('DELETE FROM tollgate_audit').run(), /append-only/)
})

test('postgres: two instances appending at once keep one unbroken chain per tenant, and rows cannot be changed', async (t) => {
  const defer: Defer = (fn) => { t.after(fn) }
  const schema = scratchSchema(defer)
  const open = async (): Promise<AuditLedger> => {
    const ledger = await PostgresAuditLedger.open({ connectionString: PG_URL, schema, connectTimeoutMs: 5000, onIdleError: () => {} })
    t.after(async () => { await ledger.close() })
    return ledger
  }
  const [a, b] = await Promise.all([open(), open()])
  await concurrentWriters([a, b])
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  t.after(async () => { await client.end() })
  await assert.rejects(client.query(`UPDATE "${schema}".tollgate_audit SET data = '{}'`), /append-only/)
  await assert.rejects(client.query(`DELETE FROM "${schema}".tollgate_audit`), /append-only/)
})
