/**
 * Schedules (`/v1/schedules`): a turn started by the gateway itself on a cron expression (with
 * seconds), owned by the principal that created it. Each tick fires once across instances; the
 * runs list what each tick did.
 */
import { Type, type Static } from '@sinclair/typebox'
import { ClientId, OpaqueId, Timestamp } from './common.js'
import { MAX_MESSAGE_CHARS, TurnRequestProperties } from './turn.js'

export const MAX_CRON_CHARS = 128
export const MAX_TIME_ZONE_CHARS = 64
export const MAX_RUNS_PAGE = 200
export const DEFAULT_RUNS_PAGE = 50

export const ScheduleOverlap = Type.Union([Type.Literal('skip'), Type.Literal('queue'), Type.Literal('replace')], {
  description: 'When a tick comes while the schedule\'s previous turn still runs: skip (record a skipped run), queue (start once ' +
    'it ends; at most one run waits), replace (cancel it, then start)'
})
export type ScheduleOverlap = Static<typeof ScheduleOverlap>

export const ScheduleOnApproval = Type.Union([Type.Literal('wait'), Type.Literal('deny')], {
  description: 'A call of a scheduled turn that needs approval: wait (the turn runs detached, its approval.requested waits for a ' +
    'person over REST or a subscription) or deny (auto-denied at once, audited as auto-deny)'
})
export type ScheduleOnApproval = Static<typeof ScheduleOnApproval>

const Cron = Type.String({
  minLength: 1, maxLength: MAX_CRON_CHARS,
  description: 'Cron expression (croner): 5 fields (minute precision), 6 with seconds first (`* * * * * *`: every second), ' +
    '7 with a year last, or a nickname such as @daily'
})
const TimeZone = Type.String({
  minLength: 1, maxLength: MAX_TIME_ZONE_CHARS, description: 'IANA time zone the expression is read in (DST included); default UTC'
})
const Message = Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS, description: 'The message each scheduled turn starts with' })
const BudgetUsd = Type.Number({
  exclusiveMinimum: 0, description: 'Passed as each turn\'s budget_usd: at most budgets.turn_usd when that is set'
})

export const ScheduleRequest = Type.Object({
  cron: Cron,
  timezone: Type.Optional(TimeZone),
  agent: TurnRequestProperties.agent,
  message: Message,
  session_id: Type.Optional(ClientId),
  overlap: Type.Optional(ScheduleOverlap),
  on_approval: Type.Optional(ScheduleOnApproval),
  budget_usd: Type.Optional(BudgetUsd),
  enabled: Type.Optional(Type.Boolean({ description: 'false: no tick fires until it is enabled again; default true' })),
  catch_up: Type.Optional(Type.Boolean({
    description: 'true: after ticks were missed (no gateway ran, or the schedule was late by more than schedules.late_tolerance_ms), ' +
      'one run starts for them; false (default): they are recorded as skipped'
  }))
}, { additionalProperties: false, title: 'ScheduleRequest' })
export type ScheduleRequest = Static<typeof ScheduleRequest>

/** A change to a schedule: any field of ScheduleRequest; the next tick is computed again from now. */
export const SchedulePatch = Type.Partial(ScheduleRequest, { additionalProperties: false, title: 'SchedulePatch' })
export type SchedulePatch = Static<typeof SchedulePatch>

export const Schedule = Type.Object({
  schedule_id: OpaqueId,
  cron: Type.String(),
  timezone: Type.String(),
  agent: Type.Optional(Type.String()),
  message: Type.String(),
  session_id: Type.Optional(Type.String()),
  overlap: ScheduleOverlap,
  on_approval: ScheduleOnApproval,
  budget_usd: Type.Optional(Type.Number()),
  enabled: Type.Boolean(),
  catch_up: Type.Boolean(),
  next_run_at: Type.Union([Timestamp, Type.Null()], { description: 'The next tick; null while disabled or when the expression has no more' }),
  last_turn_id: Type.Optional(OpaqueId),
  created_at: Timestamp,
  updated_at: Timestamp
}, { title: 'Schedule' })
export type Schedule = Static<typeof Schedule>

export const ScheduleCreated = Type.Object({
  schedule_id: OpaqueId,
  next_run_at: Type.Union([Timestamp, Type.Null()])
}, { title: 'ScheduleCreated' })

export const SchedulesPage = Type.Object({
  items: Type.Array(Schedule, { description: 'The caller\'s schedules, newest first' })
}, { title: 'SchedulesPage' })

export const ScheduleIdParams = Type.Object({ id: OpaqueId }, { additionalProperties: false })

export const ScheduleRunOutcome = Type.Union([
  Type.Literal('running'),
  Type.Literal('completed'),
  Type.Literal('failed'),
  Type.Literal('cancelled'),
  Type.Literal('interrupted'),
  Type.Literal('skipped'),
  Type.Literal('not_started')
], { description: 'A started run shows its turn\'s status; skipped: no turn was started for the tick; not_started: starting it failed' })
export type ScheduleRunOutcome = Static<typeof ScheduleRunOutcome>

export const ScheduleSkipReason = Type.Union([
  Type.Literal('overlap'),
  Type.Literal('queue_full'),
  Type.Literal('missed')
], {
  description: 'overlap: the previous turn still ran (overlap = skip); queue_full: a run already waited for it (overlap = queue); ' +
    'missed: the tick passed while no gateway ran it (catch_up = false, or an older tick of a caught-up stretch)'
})

export const ScheduleRun = Type.Object({
  run_id: OpaqueId,
  schedule_id: OpaqueId,
  fired_at: Timestamp,
  outcome: ScheduleRunOutcome,
  turn_id: Type.Optional(OpaqueId),
  reason: Type.Optional(ScheduleSkipReason),
  missed_ticks: Type.Optional(Type.Integer({ minimum: 1, description: 'reason missed: how many ticks from fired_at on were missed' })),
  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() }, {
    description: 'not_started: why the turn could not start (a problem code: TOO_MANY_TURNS, SESSION_BUSY, BUDGET_EXCEEDED, ...)'
  }))
}, { title: 'ScheduleRun' })
export type ScheduleRun = Static<typeof ScheduleRun>

export const ScheduleRunsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RUNS_PAGE, default: DEFAULT_RUNS_PAGE }))
}, { additionalProperties: false })
export type ScheduleRunsQuery = Static<typeof ScheduleRunsQuery>

export const ScheduleRunsPage = Type.Object({
  items: Type.Array(ScheduleRun, { description: 'Newest tick first; the store keeps schedules.max_runs_kept per schedule' })
}, { title: 'ScheduleRunsPage' })
