/**
 * Firing one claimed tick: the missed ticks before it recorded as one skipped run, the overlap
 * rule applied to the schedule's previous turn (skip, queue, replace), then the turn started as
 * the schedule's owner — detached, no owner connection — and recorded. A run that cannot start,
 * or whose turn ends `failed`, is reported to the run-failed sink.
 */
import type { Logger } from 'pino'
import type { TurnRequest } from '../../schemas/turn.js'
import type { Principal } from '../auth/principal.js'
import { isTollgateError } from '../core/errors.js'
import { timeOrderedUuid } from '../core/ids.js'
import type { TurnService } from '../service/turn-service.js'
import type { ScheduleRecord, ScheduleRunRecord } from '../store/schedule-book.js'
import type { Store } from '../store/store.js'

/** What a failed run is reported with. */
export interface ScheduleRunFailure {
  tenant: string
  schedule_id: string
  /** The turn that ended `failed`; absent when no turn started. */
  turn_id?: string
  /** A stable code and its message, e.g. `TOO_MANY_TURNS: ...` or `PROVIDER_ERROR: ...`. */
  reason: string
}

/** Where failed runs go (signed webhooks are built on it elsewhere); the default drops them. */
export interface ScheduleRunFailedSink {
  runFailed (info: ScheduleRunFailure): Promise<void>
}

export const NO_RUN_FAILED_SINK: ScheduleRunFailedSink = { runFailed: async () => {} }

export interface FireScope {
  store: Store
  turns: TurnService
  log: Logger
  sink: ScheduleRunFailedSink
  /** Runs kept per schedule. */
  keepRuns: number
  /** How often a queued run looks whether the previous turn has ended (when it runs on another instance). */
  pollMs: number
  /** Aborted at shutdown: a queued run stops waiting and is not started. */
  signal: AbortSignal
  /** Schedule ids with a run of this instance waiting for the previous turn (overlap = queue). */
  queued: Set<string>
}

/** The tick to fire (null: none, all were missed) and the missed stretch before it. */
export interface TickPlan {
  fireMs: number | null
  missed: { fromMs: number, count: number } | null
}

function principalOf (s: ScheduleRecord): Principal {
  return { tenant: s.tenant, sub: s.sub, scopes: new Set(s.scopes) }
}

function runId (): string {
  return `run_${timeOrderedUuid()}`
}

async function record (scope: FireScope, run: Omit<ScheduleRunRecord, 'run_id' | 'fired_at'>): Promise<void> {
  await scope.store.schedules.addRun({ run_id: runId(), fired_at: new Date(run.fired_ms).toISOString(), ...run }, scope.keepRuns)
}

async function reportFailure (scope: FireScope, info: ScheduleRunFailure): Promise<void> {
  try {
    await scope.sink.runFailed(info)
  } catch (err) {
    scope.log.warn({ err, schedule_id: info.schedule_id }, 'the schedule run-failed sink failed')
  }
}

/** Whether the schedule's previous turn still runs (here or on another instance). */
async function previousRunning (scope: FireScope, s: ScheduleRecord): Promise<boolean> {
  if (s.last_turn_id === undefined) return false
  return (await scope.store.getTurn(s.last_turn_id))?.status === 'running'
}

/** Resolves once the previous turn has ended, or with false at shutdown. */
async function previousEnded (scope: FireScope, s: ScheduleRecord): Promise<boolean> {
  const turnId = s.last_turn_id
  if (turnId === undefined) return true
  while (!scope.signal.aborted) {
    if (scope.turns.isRunningHere(turnId)) {
      const ended = scope.turns.waitFor(principalOf(s), turnId).then(() => true, () => true)
      const aborted = new Promise<boolean>((resolve) => { scope.signal.addEventListener('abort', () => { resolve(false) }, { once: true }) })
      if (!await Promise.race([ended, aborted])) return false
    }
    if (!await previousRunning(scope, s)) return true
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, scope.pollMs)
      scope.signal.addEventListener('abort', () => { clearTimeout(timer); resolve() }, { once: true })
    })
  }
  return false
}

function turnRequest (s: ScheduleRecord, fireMs: number): TurnRequest {
  return {
    message: s.message,
    ...(s.agent === undefined ? {} : { agent: s.agent }),
    ...(s.session_id === undefined ? {} : { session_id: s.session_id }),
    ...(s.budget_usd === undefined ? {} : { budget_usd: s.budget_usd }),
    // Nobody owns a scheduled turn: its approval.requested waits for a person (REST, a subscriber), or
    // a non-interactive turn denies the call at once (audited as auto-deny).
    detach: true,
    interactive: s.on_approval === 'wait',
    // A second start of one tick (on any instance) answers the first turn instead of starting another.
    idempotency_key: `schedule:${s.schedule_id}:${fireMs}`
  }
}

/** Starts the tick's turn and records the run; reports a start that fails and, later, a turn that fails. */
async function start (scope: FireScope, s: ScheduleRecord, fireMs: number): Promise<void> {
  const principal = principalOf(s)
  let turnId: string
  try {
    const { turn } = await scope.turns.start(principal, turnRequest(s, fireMs), { ownerConnection: null, channel: 'schedule' })
    turnId = turn.turn_id
  } catch (err) {
    const error = isTollgateError(err) ? { code: err.code, message: err.message } : { code: 'INTERNAL', message: 'internal error' }
    if (!isTollgateError(err)) scope.log.error({ err, schedule_id: s.schedule_id }, 'a scheduled turn could not start')
    await record(scope, { schedule_id: s.schedule_id, fired_ms: fireMs, outcome: 'not_started', error })
    await reportFailure(scope, { tenant: s.tenant, schedule_id: s.schedule_id, reason: `${error.code}: ${error.message}` })
    return
  }
  await scope.store.schedules.setLastTurn(s.schedule_id, turnId)
  await record(scope, { schedule_id: s.schedule_id, fired_ms: fireMs, outcome: 'running', turn_id: turnId })
  // Watched here, where it runs: a turn taken over by another instance after a crash is not reported.
  void scope.turns.waitFor(principal, turnId).then(async (turn) => {
    if (turn.status !== 'failed') return
    const reason = turn.error === undefined ? 'failed' : `${turn.error.code}: ${turn.error.message}`
    await reportFailure(scope, { tenant: s.tenant, schedule_id: s.schedule_id, turn_id: turnId, reason })
  }, (err: unknown) => { scope.log.warn({ err, turn_id: turnId }, 'could not follow a scheduled turn to its end') })
}

export async function fireTick (scope: FireScope, s: ScheduleRecord, plan: TickPlan): Promise<void> {
  if (plan.missed !== null) {
    await record(scope, {
      schedule_id: s.schedule_id, fired_ms: plan.missed.fromMs, outcome: 'skipped', reason: 'missed', missed_ticks: plan.missed.count
    })
  }
  const fireMs = plan.fireMs
  if (fireMs === null) return
  if (!await previousRunning(scope, s)) {
    await start(scope, s, fireMs)
    return
  }
  switch (s.overlap) {
    case 'skip':
      await record(scope, { schedule_id: s.schedule_id, fired_ms: fireMs, outcome: 'skipped', reason: 'overlap' })
      return
    case 'replace':
      if (s.last_turn_id !== undefined) {
        await scope.turns.cancel(principalOf(s), s.last_turn_id, 'replaced by the next run of its schedule').catch((err: unknown) => {
          scope.log.warn({ err, schedule_id: s.schedule_id }, 'could not cancel the previous turn of a schedule')
        })
      }
      await start(scope, s, fireMs)
      return
    case 'queue':
      if (scope.queued.has(s.schedule_id)) {
        await record(scope, { schedule_id: s.schedule_id, fired_ms: fireMs, outcome: 'skipped', reason: 'queue_full' })
        return
      }
      scope.queued.add(s.schedule_id)
      try {
        if (!await previousEnded(scope, s)) return
        // Deleted while it waited: nothing starts.
        if (await scope.store.schedules.get(s.schedule_id) === null) return
        await start(scope, s, fireMs)
      } finally {
        scope.queued.delete(s.schedule_id)
      }
  }
}
