/**
 * What the scheduler does with a due tick (planTick): an on-time tick fires and the ticks it passed
 * are one missed stretch; a tick found too late is missed unless catch_up fires it once; the
 * schedule moves on to the first tick after now. Cron clocks keep DST and refuse bad input.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { planTick } from '../../src/schedule/scheduler.js'
import { cronClock, canonicalTimeZone, MAX_TICK_WALK, ticksUpTo } from '../../src/schedule/cron.js'
import type { ScheduleRecord } from '../../src/store/schedule-book.js'
import { TollgateError } from '../../src/core/errors.js'

const T0 = Date.parse('2027-01-04T10:00:00.000Z')

function schedule (cron: string, nextMs: number, catchUp = false): ScheduleRecord {
  return {
    schedule_id: 'sch_1', owner: 'acme/alice', tenant: 'acme', sub: 'alice', scopes: [], cron, timezone: 'UTC', message: 'm',
    overlap: 'skip', on_approval: 'wait', enabled: true, catch_up: catchUp, next_run_ms: nextMs, created_at: '', updated_at: ''
  }
}

test('a tick found on time fires, and the schedule moves on to the first tick after now', () => {
  assert.deepEqual(planTick(schedule('* * * * * *', T0), T0 + 150, 60_000), { plan: { fireMs: T0, missed: null }, nextMs: T0 + 1000 })
})

test('ticks passed while no gateway ran are one missed stretch; the latest still on time fires', () => {
  assert.deepEqual(planTick(schedule('* * * * * *', T0), T0 + 5_300, 60_000), {
    plan: { fireMs: T0 + 5000, missed: { fromMs: T0, count: 5 } }, nextMs: T0 + 6000
  })
})

test('a tick found later than the tolerance is missed; catch_up fires the latest once instead', () => {
  const hourly = schedule('0 * * * *', T0)
  const now = T0 + 3 * 3_600_000 + 600_000
  assert.deepEqual(planTick(hourly, now, 60_000), { plan: { fireMs: null, missed: { fromMs: T0, count: 4 } }, nextMs: T0 + 4 * 3_600_000 })
  assert.deepEqual(planTick({ ...hourly, catch_up: true }, now, 60_000), {
    plan: { fireMs: T0 + 3 * 3_600_000, missed: { fromMs: T0, count: 3 } }, nextMs: T0 + 4 * 3_600_000
  })
})

test('a long stretch is counted up to the walk bound and its latest tick is still found', () => {
  const clock = cronClock('* * * * * *', 'UTC', T0 - 1)
  const now = T0 + 3 * 86_400_000 + 400
  assert.deepEqual(ticksUpTo(clock, T0, now), { count: MAX_TICK_WALK, latestMs: T0 + 3 * 86_400_000, counted: false })
})

test('cron clocks read time zones with DST, and refuse unreadable expressions and zones with stable codes', () => {
  // 02:30 does not exist in Berlin on 2027-03-28 (clocks jump from 02:00 to 03:00): croner fires at 03:00 CEST.
  const berlin = cronClock('30 2 * * *', canonicalTimeZone('europe/berlin'), Date.parse('2027-03-27T12:00:00Z'))
  assert.equal(new Date(berlin.after(Date.parse('2027-03-27T12:00:00Z')) ?? 0).toISOString(), '2027-03-28T01:00:00.000Z')
  assert.equal(new Date(berlin.after(Date.parse('2027-07-01T12:00:00Z')) ?? 0).toISOString(), '2027-07-02T00:30:00.000Z')
  assert.equal(canonicalTimeZone('europe/berlin'), 'Europe/Berlin')
  for (const [fn, code] of [
    [() => cronClock('not a cron', 'UTC'), 'INVALID_CRON'],
    [() => cronClock('0 0 0 1 1 * 2020', 'UTC'), 'INVALID_CRON'],
    [() => canonicalTimeZone('Mars/Olympus'), 'INVALID_TIME_ZONE']
  ] as const) {
    assert.throws(fn, (err) => err instanceof TollgateError && err.code === code && err.status === 400)
  }
})
