import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js'
import { assertSeqContiguous, shape, startGateway, type TestGateway, type TestSocket } from '../helpers/gateway.js'
import { clusterOverrides, scratchWorkspace, spawnGateway } from '../helpers/cluster.js'
import { deferrer, type Defer } from '../helpers/services.js'
import { CRASH_AFTER_EVENT_WRITE_ENV } from '../fixtures/crash-points.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import type { TurnEvent } from '../../schemas/events.js'

async function setup (defer: Defer): Promise<{ provider: FakeProvider, path: string }> {
  const provider = await startFakeProvider()
  defer(async () => { await provider.close() })
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-sqlite-gw-'))
  defer(async () => { await rm(dir, { recursive: true, force: true }) })
  return { provider, path: join(dir, 'data', 'tollgate.db') }
}

/** Runs one turn to its end over a WebSocket and answers the turn record. */
async function runTurn (
  g: { socket: () => Promise<TestSocket>, http: (method: string, path: string) => Promise<{ body: any }> },
  body: Record<string, unknown>
): Promise<any> {
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', ...body })
  assert.equal(accepted.type, 'turn.accepted', JSON.stringify(accepted))
  await ws.waitForTerminal(accepted.turn_id, 10_000)
  ws.close()
  return (await g.http('GET', `/v1/turns/${accepted.turn_id as string}`)).body
}

async function sqliteGateway (
  defer: Defer, provider: FakeProvider, path: string, extra: Record<string, unknown> = {}
): Promise<TestGateway> {
  const g = await startGateway({ provider, overrides: { store: { kind: 'sqlite', sqlite: { path } }, ...extra } })
  defer(async () => { await g.close() })
  return g
}

test('session history survives a gateway restart on the SQLite store', async (t) => {
  const defer = deferrer(t)
  const { provider, path } = await setup(defer)
  const first = await sqliteGateway(defer, provider, path)
  provider.enqueue({ text: 'Hello, Ada.' })
  const done = { body: await runTurn(first, { message: 'my name is Ada' }) }
  assert.equal(done.body.status, 'completed')
  await first.close()

  const second = await sqliteGateway(defer, provider, path)
  const session = await second.http('GET', `/v1/sessions/${done.body.session_id as string}`)
  assert.equal(session.status, 200)
  assert.deepEqual(session.body.history.map((m: { role: string, content: string }) => [m.role, m.content]), [['user', 'my name is Ada'], ['assistant', 'Hello, Ada.']])
  assert.equal((await second.http('GET', `/v1/turns/${done.body.turn_id as string}`)).body.status, 'completed')

  provider.enqueue({ text: 'You are Ada.' })
  const next = await runTurn(second, { session_id: done.body.session_id, message: 'who am I?' })
  assert.equal(next.status, 'completed')
  const sent = provider.requests.at(-1)?.body.messages.filter((m) => m.role !== 'system').map((m) => m.content)
  assert.deepEqual(sent, ['my name is Ada', 'Hello, Ada.', 'who am I?'])
})

test('a finished turn\'s events replay after a restart from the SQLite event log', async (t) => {
  const defer = deferrer(t)
  const { provider, path } = await setup(defer)
  const first = await sqliteGateway(defer, provider, path)
  provider.enqueue({ text: 'streamed answer that takes a few chunks' })
  const ws = await first.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'stream something' })
  const live = await ws.waitForTerminal(accepted.turn_id)
  await first.close()

  const second = await sqliteGateway(defer, provider, path)
  const page = await second.http('GET', `/v1/turns/${accepted.turn_id as string}/events?after_seq=2`)
  assert.equal(page.status, 200)
  assert.deepEqual(page.body.events, live.slice(2).map(({ turn_id: turnId, seq, ts, event }) => ({ turn_id: turnId, seq, ts, event })))
  const again = await second.socket()
  await again.request({ type: 'subscribe', turn_id: accepted.turn_id, after_seq: 0 })
  const replayed = await again.waitForTerminal(accepted.turn_id)
  assertSeqContiguous(replayed)
  assert.deepEqual(shape(replayed), shape(live))
})

test('a turn running when its gateway process was killed ends interrupted at the next start, with history intact', async (t) => {
  const defer = deferrer(t)
  const { provider, path } = await setup(defer)
  const workspace = await scratchWorkspace(defer)
  // Turns that do not outlive their process (durable turns resume instead: durable-sqlite.test.ts).
  const child = await spawnGateway(defer, clusterOverrides({ provider }, workspace, {
    store: { kind: 'sqlite', sqlite: { path } }, shutdown: { running_turns: 'cancel' }
  }))

  provider.enqueue({ text: 'First answer.' })
  const first = { body: await runTurn(child, { message: 'first question' }) }
  assert.equal(first.body.status, 'completed')
  provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'out.txt', content: 'x' } }] })
  const ws = await child.socket()
  const accepted = await ws.request({ type: 'turn.start', session_id: first.body.session_id, message: 'write a file' })
  const asked = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested', 10_000)
  await child.kill()

  const restarted = await sqliteGateway(defer, provider, path, { shutdown: { running_turns: 'cancel' } })
  const turn = await restarted.http('GET', `/v1/turns/${accepted.turn_id as string}`)
  assert.equal(turn.body.status, 'interrupted')
  assert.equal(turn.body.error.code, 'INTERRUPTED')
  assert.deepEqual(turn.body.approvals.map((a: { decision: string, tool: string }) => [a.tool, a.decision]), [['file_write', 'cancelled']])
  const tail = await restarted.http('GET', `/v1/turns/${accepted.turn_id as string}/events?after_seq=${asked.seq}`)
  assert.deepEqual(tail.body.events.map((e: {
    event: {
      kind: string, decision?: string, code?: string
    }
  }) => [e.event.kind, e.event.decision ?? e.event.code]), [
    ['approval.resolved', 'cancelled'],
    ['turn.failed', 'INTERRUPTED']
  ])
  assert.equal(turn.body.last_seq, asked.seq + 2)
  const session = await restarted.http('GET', `/v1/sessions/${first.body.session_id as string}`)
  assert.deepEqual(session.body.history.map((m: { content: string }) => m.content), ['first question', 'First answer.'])
  assert.deepEqual(session.body.turn_ids, [first.body.turn_id, accepted.turn_id])
})

/**
 * A gateway on the SQLite file at `path` whose running turns end interrupted when it dies (a
 * durable turn would resume: durable-sqlite.test.ts) and whose file_read runs unasked.
 */
function cancellingFileReader (provider: Parameters<typeof clusterOverrides>[0]['provider'], workspace: string, path: string): ReturnType<typeof clusterOverrides> {
  return clusterOverrides({ provider }, workspace, {
    store: { kind: 'sqlite', sqlite: { path } },
    shutdown: { running_turns: 'cancel' },
    risk_profiles: { default: { auto_approve: ['file_read'] } }
  })
}

test('a gateway killed between writing a group of events and publishing it replays those events after a restart, without gap or duplicate', async (t) => {
  const defer = deferrer(t)
  const { provider, path } = await setup(defer)
  const workspace = await scratchWorkspace(defer)
  const overrides = cancellingFileReader(provider, workspace, path)
  const child = await spawnGateway(defer, overrides, { env: { [CRASH_AFTER_EVENT_WRITE_ENV]: 'tool_call' } })
  provider.enqueue({ toolCalls: [{ id: 'r1', name: 'file_read', arguments: { path: 'missing.txt' } }] })
  const ws = await child.socket()
  const exited = once(child.child, 'exit')
  const accepted = await ws.request({ type: 'turn.start', message: 'read a file', interactive: false })
  assert.equal(accepted.type, 'turn.accepted', JSON.stringify(accepted))
  const [, signal] = await exited
  assert.equal(signal, 'SIGKILL')
  const seenLive = ws.events(accepted.turn_id)
  assert.deepEqual(seenLive.map((e) => e.event.kind), ['turn.started', 'iteration'], 'the tool_call group was written, never published')

  const restarted = await sqliteGateway(defer, provider, path, { shutdown: { running_turns: 'cancel' } })
  const page = await restarted.http('GET', `/v1/turns/${accepted.turn_id as string}/events`)
  assertSeqContiguous(page.body.events)
  assert.deepEqual(page.body.events.map((e: {
    event: {
      kind: string, status?: string, code?: string
    }
  }) => [e.event.kind, e.event.status ?? e.event.code]), [
    ['turn.started', undefined],
    ['iteration', undefined],
    ['tool_call', 'pending'],
    ['tool_result', 'interrupted'],
    ['turn.failed', 'INTERRUPTED']
  ])
  const again = await restarted.socket()
  await again.request({ type: 'subscribe', turn_id: accepted.turn_id, after_seq: seenLive.length })
  const resumed = await again.waitForTerminal(accepted.turn_id)
  assert.deepEqual(resumed.map((e) => e.seq), [3, 4, 5])
  const turn = await restarted.http('GET', `/v1/turns/${accepted.turn_id as string}`)
  assert.equal(turn.body.status, 'interrupted')
  assert.deepEqual(turn.body.tool_calls.map((c: { name: string, status: string }) => [c.name, c.status]), [['file_read', 'interrupted']])
})

test('a turn killed after its tool calls settled, with no save since its start, shows those calls on its interrupted record, rebuilt from its event log', async (t) => {
  const defer = deferrer(t)
  const { provider, path } = await setup(defer)
  const workspace = await scratchWorkspace(defer)
  const child = await spawnGateway(defer, cancellingFileReader(provider, workspace, path))
  provider.enqueue(
    {
      toolCalls: [
        { id: 'r1', name: 'file_read', arguments: { path: 'missing-1.txt' } }, { id: 'r2', name: 'file_read', arguments: { path: 'missing-2.txt' } }
      ]
    },
    // The second model call hangs: the gateway dies while it waits.
    { text: 'never seen', delayMs: 60_000 }
  )
  const ws = await child.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'read two files', interactive: false })
  assert.equal(accepted.type, 'turn.accepted', JSON.stringify(accepted))
  await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'iteration' && e.n === 2, 10_000)
  const live = ws.events(accepted.turn_id)
  await child.kill()

  // The record as the dead process left it: saved when the turn started, not per tool call.
  const file = new SqliteStore({ path, instanceId: 'inspect', checkpointMs: 0 })
  const left = await file.getTurn(accepted.turn_id)
  await file.close()
  assert.deepEqual([left?.status, left?.iterations, left?.last_seq, left?.tool_calls], ['running', 0, 1, []])

  const restarted = await sqliteGateway(defer, provider, path, { shutdown: { running_turns: 'cancel' } })
  const turn = await restarted.http('GET', `/v1/turns/${accepted.turn_id as string}`)
  assert.equal(turn.body.status, 'interrupted')
  assert.equal(turn.body.iterations, 2)
  // Each call exactly as the running turn recorded it, from its tool_call and tool_result events.
  const calls = live.map((e) => e.event).filter((e): e is Extract<TurnEvent, { kind: 'tool_call' }> => e.kind === 'tool_call')
  const results = live.map((e) => e.event).filter((e): e is Extract<TurnEvent, { kind: 'tool_result' }> => e.kind === 'tool_result')
  assert.equal(results.length, 2)
  assert.deepEqual(turn.body.tool_calls, calls.map((c, index) => {
    const r = results[index]
    return {
      call_id: c.call_id, provider_call_id: c.provider_call_id, iteration: 1, index, name: 'file_read', arguments: c.arguments,
      status: r?.status, success: false, output: r?.output, error: r?.error, duration_ms: r?.duration_ms
    }
  }))
  assert.deepEqual(calls.map((c) => c.provider_call_id), ['r1', 'r2'])
  assert.deepEqual(results.map((r) => r.status), ['error', 'error'])
  const tail = await restarted.http('GET', `/v1/turns/${accepted.turn_id as string}/events?after_seq=${live.length}`)
  const closing = tail.body.events as Array<{ seq: number, event: { kind: string, code?: string } }>
  assert.deepEqual(closing.map((e) => [e.seq, e.event.kind, e.event.code]), [
    [live.length + 1, 'turn.failed', 'INTERRUPTED']
  ])
  assert.equal(turn.body.last_seq, live.length + 1)
})
