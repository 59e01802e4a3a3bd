/**
 * Durable turns on SQLite against hostile model data and a failing store: a tool call whose
 * arguments nest thousands of levels deep (a few KB of model output) gets an error result and the
 * turn goes on; a checkpoint the store refuses to write does not end the turn either.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BusEnvelope, CheckpointRow } from '../../src/core/envelope.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import type { FinishedTurn, TurnRecord } from '../../src/store/store.js'
import { assertSeqContiguous, shape, startGateway, type TestGateway } from '../helpers/gateway.js'
import { startProbeGateway } from '../helpers/tools.js'
import { runTurn } from '../helpers/turns.js'

const DEPTH = 5000
/** `{"path":"notes.txt","filter":[[[…]]]}`: about 10 KB of model output. */
const DEEP_ARGUMENTS = `{"path":"notes.txt","filter":${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}}`
const REFUSED = "Error: invalid arguments for 'file_read': arguments nest deeper than 64 levels"

async function sqlitePath (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-durable-data-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  return join(dir, 'tollgate.db')
}

async function durableGateway (t: TestContext, extra: Record<string, unknown> = {}): Promise<TestGateway> {
  const g = await startGateway({ overrides: { store: { kind: 'sqlite', sqlite: { path: await sqlitePath(t) } }, ...extra } })
  t.after(async () => { await g.close() })
  return g
}

/** The deep call is refused with an error result the model reads, and the turn completes with its answer. */
async function assertRefusedAndCompleted (g: TestGateway): Promise<void> {
  const { turn, events } = await runTurn(g, { message: 'read the notes', interactive: false })
  assert.equal(turn.status, 'completed', JSON.stringify(turn.error))
  assert.equal(turn.final_text, 'The arguments were refused.')
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:file_read', 'tool_result:file_read:error', 'iteration', 'turn.completed'])
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.equal(result?.kind === 'tool_result' && result.output, REFUSED)
  assert.deepEqual(turn.tool_calls.map((c: { status: string, output: string }) => [c.status, c.output]), [['error', REFUSED]])
}

test('a native tool call nested 5,000 levels deep gets an error result on a durable turn, and the turn completes', async (t) => {
  const g = await durableGateway(t)
  g.provider.enqueue({ toolCalls: [{ id: 'deep', name: 'file_read', arguments: DEEP_ARGUMENTS }] }, { text: 'The arguments were refused.' })
  await assertRefusedAndCompleted(g)
  const told = g.provider.requests[1]?.body.messages.at(-1)
  assert.deepEqual([told?.role, told?.tool_call_id, told?.content], ['tool', 'deep', REFUSED])
})

test('a text-protocol tool call nested 5,000 levels deep gets an error result on a durable turn, and the turn completes', async (t) => {
  const g = await durableGateway(t, { providers: { fake: { native_tools: false } } })
  g.provider.enqueue(
    { text: `<tool_call>{"name":"file_read","arguments":${DEEP_ARGUMENTS}}</tool_call>` },
    { text: 'The arguments were refused.' }
  )
  await assertRefusedAndCompleted(g)
})

test('both bounds are configurable: a call within them runs, a call past either gets an error result and does not run', async (t) => {
  const { g, probes } = await startProbeGateway(t, { turns: { tool_arguments: { max_depth: 2, max_chars: 1024 } } })
  g.provider.enqueue({
    toolCalls: [
      { id: 'within', name: 'probe', arguments: { label: 'within' } },
      { id: 'deep', name: 'probe', arguments: { label: 'deep', x: [[1]] } },
      { id: 'long', name: 'probe', arguments: { label: 'l'.repeat(1024) } }
    ]
  }, { text: 'done' })
  const { turn } = await runTurn(g, { message: 'run three', interactive: false })
  assert.equal(turn.status, 'completed')
  assert.deepEqual(probes.runs.map((r) => r.label), ['within'])
  const calls = turn.tool_calls as Array<{ provider_call_id: string, status: string, output: string }>
  assert.deepEqual(calls.map((c) => [c.provider_call_id, c.status, c.output]), [
    ['within', 'ok', 'done within'],
    ['deep', 'error', "Error: invalid arguments for 'probe': arguments nest deeper than 2 levels"],
    ['long', 'error', "Error: invalid arguments for 'probe': arguments take more than 1024 characters of JSON"]
  ])
})

test('a checkpoint write the store refuses does not end the turn: it completes, and its events reach the log once the store takes them', async (t) => {
  const path = await sqlitePath(t)
  const sqlite = new SqliteStore({ path, instanceId: 'inst-a', checkpointMs: 0 })
  // The first write carrying a checkpoint after the turn's creation (its round's, before the tool runs) fails.
  let refusals = 0
  const store = new Proxy(sqlite, {
    get (target, key) {
      if (key !== 'appendEventsNow') {
        const value: unknown = Reflect.get(target, key, target)
        return typeof value === 'function' ? value.bind(target) : value
      }
      return (
        events: readonly BusEnvelope[], checkpoints: readonly CheckpointRow[] = [],
        finished?: readonly FinishedTurn[], records?: readonly TurnRecord[]
      ) => {
        if (checkpoints.length > 0 && refusals === 0) {
          refusals++
          throw new Error('disk I/O error')
        }
        target.appendEventsNow(events, checkpoints, finished, records)
      }
    }
  })
  const { g, probes } = await startProbeGateway(t, { store: { kind: 'sqlite', sqlite: { path } }, cluster: { lease_ms: 600_000 } }, { store })
  g.provider.enqueue({ toolCalls: [{ id: 'a', name: 'probe', arguments: { label: 'a' } }] }, { text: 'done' })
  const { turn, events } = await runTurn(g, { message: 'run it', interactive: false })
  assert.equal(refusals, 1)
  assert.equal(turn.status, 'completed', JSON.stringify(turn.error))
  assert.deepEqual(probes.runs.map((r) => r.label), ['a'])
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:probe', 'tool_result:probe:ok', 'iteration', 'turn.completed'])
  assert.deepEqual((await sqlite.readEvents(turn.turn_id, 0, 100)).map((e) => e.seq), events.map((e) => e.seq))
})
