/**
 * Durable turns on SQLite with real processes: a scratch gateway set-up that restarts on the same
 * database file, and the reads the durable-sqlite-* tests share.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EventEnvelope } from '../../schemas/events.js'
import { LOCAL_PRINCIPAL } from '../../src/auth/principal.js'
import { workspaceSlug } from '../../src/tools/builtin/workspace-layout.js'
import { startFakeProvider, type FakeProvider } from './fake-provider.js'
import { clusterOverrides, scratchWorkspace, spawnGateway, type GatewayProcess } from './cluster.js'
import { type Defer } from './services.js'
import { eventually } from './eventually.js'

export interface Setup {
  provider: FakeProvider
  workspace: string
  start: (extra?: unknown, env?: Record<string, string>) => Promise<GatewayProcess>
}

export async function setup (defer: Defer, extra: unknown = {}): Promise<Setup> {
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-durable-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  const workspace = await scratchWorkspace(defer)
  const path = join(dir, 'data', 'tollgate.db')
  return {
    provider,
    workspace,
    start: async (more = {}, env = {}) => await spawnGateway(defer, clusterOverrides({ provider }, workspace, {
      store: { kind: 'sqlite', sqlite: { path } }, ...extra as object, ...more as object
    }), { env })
  }
}

export async function events (g: GatewayProcess, turnId: string): Promise<EventEnvelope[]> {
  const page = await g.http('GET', `/v1/turns/${turnId}/events`)
  assert.equal(page.status, 200, JSON.stringify(page.body))
  return page.body.events
}

export async function finished (g: GatewayProcess, turnId: string, timeoutMs = 15_000): Promise<any> {
  let turn: any
  await eventually(async () => {
    turn = (await g.http('GET', `/v1/turns/${turnId}`)).body
    return turn.status !== 'running'
  }, { what: `turn ${turnId} to finish`, timeoutMs })
  return turn
}

/** Event kinds in order, a streamed text's run of deltas as one, without a command's progress lines. */
export function kinds (log: readonly EventEnvelope[]): string[] {
  return log.map((e) => e.event.kind).filter((k, i, all) => k !== 'tool.progress' && (k !== 'text.delta' || all[i - 1] !== 'text.delta'))
}

export function tenantFile (workspace: string, name: string): string {
  return join(workspace, workspaceSlug(LOCAL_PRINCIPAL.tenant), name)
}

/**
 * Starts a detached turn whose first call (file_write) waits for approval, the model's final
 * answer scripted after it (`final: false`: none); answers its pending request.
 */
export async function turnWaitingForApproval (
  g: GatewayProcess, provider: FakeProvider, final = true
): Promise<{ turnId: string, pending: any }> {
  provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'out.txt', content: 'written once\n' } }] })
  if (final) provider.enqueue({ text: 'The file is written.' })
  const started = await g.http('POST', '/v1/turns', { message: 'write the file', detach: true })
  assert.equal(started.status, 202, JSON.stringify(started.body))
  const turnId = started.body.turn_id as string
  return { turnId, pending: await firstPendingApproval(g, turnId, 'the approval request') }
}

/** Waits for the turn's first pending approval request as `GET /v1/approvals` lists it. */
export async function firstPendingApproval (g: GatewayProcess, turnId: string, what: string): Promise<any> {
  let pending: any
  await eventually(async () => {
    pending = (await g.http('GET', `/v1/approvals?status=pending&turn_id=${turnId}`)).body.items?.[0]
    return pending !== undefined
  }, { what, timeoutMs: 10_000 })
  return pending
}
