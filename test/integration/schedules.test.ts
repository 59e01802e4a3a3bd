/**
 * Schedules over real HTTP on one gateway (memory store): an every-second schedule starts turns
 * listed in its runs and stops on DELETE; on_approval denies or leaves a detached waiting
 * approval; a busy previous turn makes a tick skip; a failed turn reaches the run-failed sink;
 * another principal sees none of it; bad input is problem JSON with a stable code.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { eventually } from '../helpers/eventually.js'
import { bearer, jwtAuth, mintToken } from '../helpers/tokens.js'
import type { ScheduleRunFailure } from '../../src/schedule/fire.js'

const FAST = { schedules: { poll_ms: 100 } }

async function start (t: TestContext, overrides: Record<string, unknown> = {}, more: Parameters<typeof startGateway>[0] = {}): Promise<{
  g: TestGateway, alice: Record<string, string>, bob: Record<string, string>
}> {
  const g = await startGateway({ overrides: { ...jwtAuth(), ...FAST, ...overrides }, ...more })
  t.after(async () => { await g.close() })
  return {
    g,
    alice: bearer(await mintToken({ tenant: 'acme', sub: 'alice' })),
    bob: bearer(await mintToken({ tenant: 'acme', sub: 'bob' }))
  }
}

/** A 7-field UTC expression that fires once, at the whole second `ms`. */
function onceAt (ms: number): string {
  const d = new Date(ms)
  return `${d.getUTCSeconds()} ${d.getUTCMinutes()} ${d.getUTCHours()} ${d.getUTCDate()} ${d.getUTCMonth() + 1} * ${d.getUTCFullYear()}`
}

function soon (): string {
  return onceAt(Math.ceil(Date.now() / 1000) * 1000 + 2000)
}

async function runs (g: TestGateway, auth: Record<string, string>, id: string): Promise<any[]> {
  const res = await g.http('GET', `/v1/schedules/${id}/runs`, undefined, auth)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.items
}

async function startedRuns (g: TestGateway, auth: Record<string, string>, id: string, n: number, timeoutMs = 10_000): Promise<any[]> {
  let started: any[] = []
  await eventually(async () => {
    started = (await runs(g, auth, id)).filter((r) => r.turn_id !== undefined)
    return started.length >= n
  }, { what: `${n} started runs of ${id}`, timeoutMs })
  return started
}

async function turnIds (g: TestGateway, auth: Record<string, string>): Promise<string[]> {
  const res = await g.http('GET', '/v1/turns?limit=100', undefined, auth)
  assert.equal(res.status, 200)
  return res.body.items.map((i: { turn_id: string }) => i.turn_id).sort()
}

async function finished (g: TestGateway, auth: Record<string, string>, turnId: string): Promise<any> {
  let turn: any
  await eventually(async () => {
    turn = (await g.http('GET', `/v1/turns/${turnId}`, undefined, auth)).body
    return turn.status !== 'running'
  }, { what: `turn ${turnId} to end` })
  return turn
}

test('an every-second schedule starts at least two turns within 4.5 s, lists them in its runs, and DELETE stops it', async (t) => {
  const { g, alice } = await start(t)
  g.provider.enqueue(...Array.from({ length: 40 }, () => ({ text: 'tick done' })))
  const created = await g.http('POST', '/v1/schedules', { cron: '* * * * * *', message: 'tick' }, alice)
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const id = created.body.schedule_id as string
  assert.ok(Date.parse(created.body.next_run_at) > Date.now() - 1000)

  const started = await startedRuns(g, alice, id, 2, 4500)
  for (const run of started) {
    assert.equal(run.schedule_id, id)
    const turn = await finished(g, alice, run.turn_id)
    assert.equal(turn.status, 'completed')
    assert.equal(turn.final_text, 'tick done')
  }
  const fired = started.map((r) => r.fired_at)
  assert.equal(new Set(fired).size, fired.length, 'each tick fired once')
  assert.ok(started.every((r) => Date.parse(r.fired_at) % 1000 === 0), 'fired_at is the tick, a whole second')
  const listed = await g.http('GET', '/v1/schedules', undefined, alice)
  type Shown = { schedule_id: string, overlap: string, on_approval: string }
  const shown = listed.body.items.map((s: Shown) => [s.schedule_id, s.overlap, s.on_approval])
  assert.deepEqual(shown, [[id, 'skip', 'wait']])

  assert.equal((await g.http('DELETE', `/v1/schedules/${id}`, undefined, alice)).status, 204)
  const before = await turnIds(g, alice)
  assert.equal((await g.http('GET', `/v1/schedules/${id}`, undefined, alice)).body.code, 'SCHEDULE_NOT_FOUND')
  // Another every-second schedule proves ticks kept coming: the deleted one started none of them.
  const other = await g.http('POST', '/v1/schedules', { cron: '* * * * * *', message: 'other' }, alice)
  const otherRuns = await startedRuns(g, alice, other.body.schedule_id, 2)
  await g.http('DELETE', `/v1/schedules/${other.body.schedule_id as string}`, undefined, alice)
  assert.deepEqual(await turnIds(g, alice), [...before, ...otherRuns.map((r) => r.turn_id as string)].sort())
})

test('on_approval = "deny": the scheduled turn\'s call needing approval is auto-denied and the turn completes', async (t) => {
  const { g, alice } = await start(t)
  g.provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'x.txt', content: 'x' } }] }, { text: 'denied, fine' })
  const created = await g.http('POST', '/v1/schedules', { cron: soon(), message: 'write', on_approval: 'deny' }, alice)
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const [run] = await startedRuns(g, alice, created.body.schedule_id, 1)
  const turn = await finished(g, alice, run.turn_id)
  assert.equal(turn.status, 'completed')
  assert.deepEqual(turn.tool_calls.map((c: { name: string, status: string }) => [c.name, c.status]), [['file_write', 'denied']])
  assert.deepEqual(turn.approvals.map((a: { decision: string, decided_by: string }) => [a.decision, a.decided_by]), [['auto-deny', 'runtime']])
  assert.equal((await runs(g, alice, created.body.schedule_id))[0].outcome, 'completed')
})

test('on_approval = "wait": the scheduled turn runs detached and its approval waits for a person, who answers over REST', async (t) => {
  const { g, alice } = await start(t)
  g.provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'x.txt', content: 'x' } }] }, { text: 'written' })
  const created = await g.http('POST', '/v1/schedules', { cron: soon(), message: 'write', on_approval: 'wait' }, alice)
  const [run] = await startedRuns(g, alice, created.body.schedule_id, 1)
  let pending: any
  await eventually(async () => {
    pending = (await g.http('GET', `/v1/approvals?status=pending&turn_id=${run.turn_id as string}`, undefined, alice)).body.items?.[0]
    return pending !== undefined
  }, { what: 'the scheduled turn\'s pending approval' })
  assert.equal(pending.tool, 'file_write')
  assert.equal((await g.http('GET', `/v1/turns/${run.turn_id as string}`, undefined, alice)).body.status, 'running')
  assert.equal((await runs(g, alice, created.body.schedule_id))[0].outcome, 'running')
  const answered = await g.http('POST', `/v1/approvals/${pending.request_id as string}`, { decision: 'yes' }, alice)
  assert.equal(answered.status, 200, JSON.stringify(answered.body))
  const turn = await finished(g, alice, run.turn_id)
  assert.deepEqual([turn.status, turn.tool_calls[0].status, turn.approvals[0].decision], ['completed', 'ok', 'yes'])
})

test('overlap = "skip": a tick while the previous turn still runs is recorded as skipped with the reason overlap', async (t) => {
  const { g, alice } = await start(t)
  let release = (): void => {}
  g.provider.enqueue({ gate: new Promise<void>((resolve) => { release = resolve }), text: 'slow' })
  const created = await g.http('POST', '/v1/schedules', { cron: '* * * * * *', message: 'slow', overlap: 'skip' }, alice)
  const id = created.body.schedule_id as string
  await eventually(async () => (await runs(g, alice, id)).some((r) => r.outcome === 'skipped'), { what: 'a skipped run' })
  assert.equal((await g.http('PATCH', `/v1/schedules/${id}`, { enabled: false }, alice)).body.next_run_at, null)
  release()
  const all = await runs(g, alice, id)
  const started = all.filter((r) => r.turn_id !== undefined)
  assert.equal(started.length, 1, JSON.stringify(all))
  const skipped = all.find((r) => r.outcome === 'skipped')
  assert.deepEqual([skipped.reason, skipped.turn_id], ['overlap', undefined])
  assert.ok(skipped.fired_at > started[0].fired_at)
})

test('overlap = "replace": a tick while the previous turn still runs cancels it and starts the next turn', async (t) => {
  const { g, alice } = await start(t)
  g.provider.enqueue({ hang: true }, ...Array.from({ length: 20 }, () => ({ text: 'next' })))
  const created = await g.http('POST', '/v1/schedules', { cron: '* * * * * *', message: 'replace me', overlap: 'replace' }, alice)
  const id = created.body.schedule_id as string
  const started = await startedRuns(g, alice, id, 2)
  await g.http('PATCH', `/v1/schedules/${id}`, { enabled: false }, alice)
  // Newest first: the oldest two are the replaced turn and the one that replaced it.
  const [second, first] = [started.at(-2), started.at(-1)]
  const cancelled = await finished(g, alice, first.turn_id)
  assert.equal(cancelled.status, 'cancelled')
  assert.ok(Date.parse(second.fired_at) > Date.parse(first.fired_at))
  assert.equal((await runs(g, alice, id)).at(-1).outcome, 'cancelled')
})

test('overlap = "queue": a tick while the previous turn runs starts once it ends; further ticks meanwhile are skipped as queue_full', async (t) => {
  const { g, alice } = await start(t)
  let release = (): void => {}
  g.provider.enqueue({ gate: new Promise<void>((resolve) => { release = resolve }), text: 'slow' }, ...Array.from({ length: 20 }, () => ({ text: 'next' })))
  const created = await g.http('POST', '/v1/schedules', { cron: '* * * * * *', message: 'queue', overlap: 'queue' }, alice)
  const id = created.body.schedule_id as string
  await eventually(async () => (await runs(g, alice, id)).some((r) => r.reason === 'queue_full'), { what: 'a queue_full skip' })
  assert.equal((await runs(g, alice, id)).filter((r) => r.turn_id !== undefined).length, 1, 'nothing started while the first turn ran')
  release()
  const started = await startedRuns(g, alice, id, 2)
  await g.http('PATCH', `/v1/schedules/${id}`, { enabled: false }, alice)
  const all = await runs(g, alice, id)
  const firstSkip = all.filter((r) => r.reason === 'queue_full').at(-1)
  const [queued, first] = [started.at(-2), started.at(-1)]
  assert.ok(Date.parse(first.fired_at) < Date.parse(queued.fired_at) && Date.parse(queued.fired_at) < Date.parse(firstSkip.fired_at),
    'the queued run is the tick after the first, before the skipped ones')
  assert.equal((await finished(g, alice, queued.turn_id)).status, 'completed')
})

test('a scheduled turn that fails, and a tick that cannot start a turn, are reported to the run-failed sink', async (t) => {
  const failures: ScheduleRunFailure[] = []
  const { g, alice } = await start(t, { turns: { max_active_turns_per_principal: 1 } }, {
    scheduleRunFailed: { runFailed: async (info) => { failures.push(info) } }
  })
  // No scripted reply: the provider answers 500 and the turn fails.
  const created = await g.http('POST', '/v1/schedules', { cron: soon(), message: 'fail' }, alice)
  const id = created.body.schedule_id as string
  const [run] = await startedRuns(g, alice, id, 1)
  await eventually(() => failures.length === 1, { what: 'the failed run to be reported' })
  assert.deepEqual(failures[0], { tenant: 'acme', schedule_id: id, turn_id: run.turn_id, reason: failures[0]?.reason })
  assert.match(String(failures[0]?.reason), /^PROVIDER_ERROR: /)
  assert.equal((await runs(g, alice, id))[0].outcome, 'failed')

  // The principal's one turn slot is taken: the next tick cannot start its turn.
  let release = (): void => {}
  g.provider.enqueue({ gate: new Promise<void>((resolve) => { release = resolve }), text: 'busy' })
  const busy = await g.http('POST', '/v1/turns', { message: 'hold the slot' }, alice)
  assert.equal(busy.status, 202)
  t.after(release)
  const blocked = await g.http('POST', '/v1/schedules', { cron: soon(), message: 'blocked' }, alice)
  await eventually(() => failures.length === 2, { what: 'the run that could not start to be reported' })
  assert.deepEqual(failures[1], { tenant: 'acme', schedule_id: blocked.body.schedule_id, reason: failures[1]?.reason })
  assert.match(String(failures[1]?.reason), /^TOO_MANY_TURNS: /)
  const [notStarted] = await runs(g, alice, blocked.body.schedule_id)
  assert.deepEqual([notStarted.outcome, notStarted.error.code, notStarted.turn_id], ['not_started', 'TOO_MANY_TURNS', undefined])
})

test('a principal sees and changes only its own schedules: another\'s answer 404 SCHEDULE_NOT_FOUND, like missing ones', async (t) => {
  const { g, alice, bob } = await start(t)
  const created = await g.http('POST', '/v1/schedules', { cron: '0 0 * * *', timezone: 'Europe/Berlin', message: 'daily' }, alice)
  const id = created.body.schedule_id as string
  for (const [method, path, body] of [
    ['GET', `/v1/schedules/${id}`, undefined], ['PATCH', `/v1/schedules/${id}`, { enabled: false }],
    ['DELETE', `/v1/schedules/${id}`, undefined], ['GET', `/v1/schedules/${id}/runs`, undefined],
    ['GET', '/v1/schedules/sch_missing', undefined]
  ] as const) {
    const res = await g.http(method, path, body, bob)
    assert.deepEqual([res.status, res.body.code], [404, 'SCHEDULE_NOT_FOUND'], `${method} ${path}`)
  }
  assert.deepEqual((await g.http('GET', '/v1/schedules', undefined, bob)).body.items, [])
  const mine = await g.http('GET', `/v1/schedules/${id}`, undefined, alice)
  assert.deepEqual([mine.body.enabled, mine.body.timezone, mine.body.next_run_at], [true, 'Europe/Berlin', created.body.next_run_at])
  // Midnight in Berlin is 23:00 or 22:00 UTC.
  assert.match(mine.body.next_run_at, /T2[23]:00:00\.000Z$/)
  const patched = await g.http('PATCH', `/v1/schedules/${id}`, { cron: '30 6 * * *', timezone: 'UTC' }, alice)
  assert.equal(patched.status, 200, JSON.stringify(patched.body))
  assert.match(patched.body.next_run_at, /T06:30:00\.000Z$/)
})

test('bad input is problem JSON with a stable code: INVALID_CRON, INVALID_TIME_ZONE, INVALID_REQUEST, and TOO_MANY_SCHEDULES past the limit', async (t) => {
  const { g, alice } = await start(t, { schedules: { ...FAST.schedules, max_per_principal: 2 } })
  const cases: Array<[unknown, number, string]> = [
    [{ cron: 'every minute', message: 'm' }, 400, 'INVALID_CRON'],
    [{ cron: '61 * * * *', message: 'm' }, 400, 'INVALID_CRON'],
    [{ cron: '0 0 0 1 1 * 2020', message: 'm' }, 400, 'INVALID_CRON'],
    [{ cron: '* * * * *', timezone: 'Mars/Olympus', message: 'm' }, 400, 'INVALID_TIME_ZONE'],
    [{ cron: '* * * * *', message: 'm', overlap: 'sometimes' }, 400, 'INVALID_REQUEST'],
    [{ cron: '* * * * *', message: 'm', surprise: true }, 400, 'INVALID_REQUEST'],
    [{ cron: 'x'.repeat(129), message: 'm' }, 400, 'INVALID_REQUEST'],
    [{ cron: '* * * * *', message: '' }, 400, 'INVALID_REQUEST'],
    [{ cron: '* * * * *', message: 'm', agent: 'nobody' }, 400, 'UNKNOWN_AGENT']
  ]
  for (const [body, status, code] of cases) {
    const res = await g.http('POST', '/v1/schedules', body, alice)
    assert.deepEqual([res.status, res.body.code, res.headers.get('content-type')], [status, code, 'application/problem+json; charset=utf-8'], JSON.stringify(body))
  }
  assert.deepEqual((await g.http('GET', '/v1/schedules', undefined, alice)).body.items, [], 'nothing refused was stored')
  for (let i = 0; i < 2; i++) assert.equal((await g.http('POST', '/v1/schedules', { cron: '0 0 * * *', message: `m${i}` }, alice)).status, 201)
  const third = await g.http('POST', '/v1/schedules', { cron: '0 0 * * *', message: 'm3' }, alice)
  assert.deepEqual([third.status, third.body.code], [409, 'TOO_MANY_SCHEDULES'])
  const first = (await g.http('GET', '/v1/schedules', undefined, alice)).body.items[0]
  const bad = await g.http('PATCH', `/v1/schedules/${first.schedule_id as string}`, { timezone: 'Nowhere' }, alice)
  assert.deepEqual([bad.status, bad.body.code], [400, 'INVALID_TIME_ZONE'])
  const runsBad = await g.http('GET', `/v1/schedules/${first.schedule_id as string}/runs?limit=0`, undefined, alice)
  assert.deepEqual([runsBad.status, runsBad.body.code], [400, 'INVALID_REQUEST'])
})
