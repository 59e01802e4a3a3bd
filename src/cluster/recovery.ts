/**
 * Ending a turn whose instance died mid-turn. Its saved record is brought up to date from its
 * event log (the record is saved at start, approval waits and the end, not per tool call: the
 * log holds the calls that settled since), then what was left open is closed — a pending
 * approval resolves `cancelled`, a tool call without a result gets an `interrupted` one — and
 * `turn.failed {code: INTERRUPTED}` is appended after the last event; the turn is recorded as
 * `interrupted`. The record is written compare-and-set, so when several instances recover one
 * turn only the winner appends events. Session history is untouched: it stays as the last
 * finished turn left it.
 */
import type { TurnEvent } from '../../schemas/events.js'
import type { ApprovalAuditEntry } from '../../schemas/turn.js'
import type { Logger } from 'pino'
import type { BusEnvelope } from '../bus/bus.js'
import { tenantOf } from '../core/tenancy.js'
import type { TurnJournal } from '../journal/journal.js'
import type { RunningTurn, Store, TurnRecord } from '../store/store.js'
import { insertCall, readTurnLog, summarizeLog, withLoggedProgress, type LogSummary } from './turn-log.js'

export const INTERRUPTED_MESSAGE = 'the gateway instance running this turn stopped before the turn finished'
export const INTERRUPTED_TOOL_OUTPUT = '[interrupted: the gateway stopped before this tool produced a result]'

export interface RecoveryContext {
  store: Store
  /** Reads the turn's log, and stores and publishes the events that close it. */
  journal: TurnJournal
  log: Logger
}

/** Events that close the approvals and tool calls the log shows as still open. */
function closeOpenWork (summary: LogSummary, record: TurnRecord, now: string): TurnEvent[] {
  const closing: TurnEvent[] = []
  for (const a of summary.openApprovals.values()) {
    closing.push({ kind: 'approval.resolved', request_id: a.request_id, call_id: a.call_id, decision: 'cancelled', decided_by: 'runtime' })
    if (record.approvals.some((e) => e.request_id === a.request_id)) continue
    const entry: ApprovalAuditEntry = {
      request_id: a.request_id, call_id: a.call_id, tool: a.name, arguments_summary: a.summary,
      decision: 'cancelled', decided_by: 'runtime', channel: 'runtime', principal: 'runtime', timestamp: now
    }
    record.approvals.push(entry)
  }
  for (const { event: c, iteration, index, result } of summary.calls.values()) {
    if (result !== null) continue
    closing.push({ kind: 'tool_result', call_id: c.call_id, name: c.name, success: false, status: 'interrupted', output: INTERRUPTED_TOOL_OUTPUT, duration_ms: 0 })
    if (record.tool_calls.some((t) => t.call_id === c.call_id)) continue
    insertCall(record.tool_calls, {
      call_id: c.call_id, iteration, index, name: c.name, arguments: c.arguments,
      status: 'interrupted', success: false, output: INTERRUPTED_TOOL_OUTPUT, duration_ms: 0,
      ...(c.provider_call_id === undefined ? {} : { provider_call_id: c.provider_call_id })
    })
  }
  return closing
}

/** The turn's own terminal event made it into the log before the process died: keep that outcome. */
function adoptTerminal (record: TurnRecord, event: TurnEvent): void {
  if (event.kind === 'turn.completed') {
    record.status = 'completed'
    record.final_text = event.final_text
  } else if (event.kind === 'turn.cancelled') {
    record.status = 'cancelled'
  } else if (event.kind === 'turn.failed') {
    record.status = 'failed'
    record.error = { code: event.code, message: event.message }
  }
  if ('usage' in event && event.usage !== undefined) record.usage = event.usage
}

/** Ends one orphaned turn; answers false when another instance got there first. */
export async function interruptOrphan (ctx: RecoveryContext, orphan: RunningTurn): Promise<boolean> {
  const turn = await ctx.store.getTurn(orphan.turnId)
  if (turn === null || turn.status !== 'running') return false
  const summary = summarizeLog(await readTurnLog(ctx.journal, turn.turn_id))
  const known = await ctx.journal.lastSeq(turn.turn_id).catch(() => 0)
  const lastSeq = Math.max(turn.last_seq, summary.last?.seq ?? 0, known)
  const now = new Date().toISOString()
  // A copy brought up to date from the log: the calls that settled since the last save.
  const record = withLoggedProgress(turn, summary)
  // Nothing of an ended turn waits any more, whatever its last save listed.
  record.pending_approvals = []
  let closing: TurnEvent[] = []
  if (summary.terminal !== null) {
    adoptTerminal(record, summary.terminal.event)
  } else {
    closing = closeOpenWork(summary, record, now)
    closing.push({ kind: 'turn.failed', code: 'INTERRUPTED', message: INTERRUPTED_MESSAGE })
    record.status = 'interrupted'
    record.error = { code: 'INTERRUPTED', message: INTERRUPTED_MESSAGE }
  }
  const envelopes: BusEnvelope[] = closing.map((event, i) => ({
    turn_id: turn.turn_id, session_id: turn.session_id, tenant: tenantOf(turn.owner), seq: lastSeq + 1 + i, ts: now, event
  }))
  record.last_seq = envelopes.at(-1)?.seq ?? lastSeq
  record.updated_at = now
  if (!await ctx.store.interruptTurn(record, orphan.instanceId)) return false
  for (const e of envelopes) ctx.journal.append(e)
  ctx.log.warn({ turn_id: turn.turn_id, session_id: turn.session_id, dead_instance: orphan.instanceId, status: record.status }, 'ended a turn whose gateway instance had stopped')
  return true
}
