/**
 * Ending a turn whose instance died mid-turn. From the turn's event log it closes what was
 * left open — a pending approval resolves `cancelled`, a tool call without a result gets an
 * `interrupted` one — then appends `turn.failed {code: INTERRUPTED}` after the last event and
 * records the turn as `interrupted`. The record is written compare-and-set, so when several
 * instances recover one turn only the winner appends events. Session history is untouched: it
 * stays as the last finished turn left it.
 */
import type { Logger } from 'pino'
import { TERMINAL_EVENT_KINDS, type TurnEvent } from '../../schemas/events.js'
import type { ApprovalAuditEntry, ToolCallRecord } from '../../schemas/turn.js'
import type { BusEnvelope, EventBus, EventLog } from '../bus/bus.js'
import type { RunningTurn, Store, TurnRecord } from '../store/store.js'

export const INTERRUPTED_MESSAGE = 'the gateway instance running this turn stopped before the turn finished'
export const INTERRUPTED_TOOL_OUTPUT = '[interrupted: the gateway stopped before this tool produced a result]'

export interface RecoveryContext {
  store: Store
  bus: EventBus
  log: Logger
}

type Event<K extends TurnEvent['kind']> = Extract<TurnEvent, { kind: K }>

/** Events that close the approvals and tool calls the log shows as still open. */
function closeOpenWork (events: readonly BusEnvelope[], record: TurnRecord, now: string): TurnEvent[] {
  let iteration = 1
  let position = 0
  const calls = new Map<string, { event: Event<'tool_call'>, iteration: number, index: number }>()
  const approvals = new Map<string, Event<'approval.requested'>>()
  for (const { event } of events) {
    if (event.kind === 'iteration') {
      iteration = event.n
      position = 0
    } else if (event.kind === 'tool_call') {
      // Sequential rounds stream cards in model order; for a crashed parallel round this is the best
      // position the log can tell.
      calls.set(event.call_id, { event, iteration, index: position++ })
    } else if (event.kind === 'tool_result') calls.delete(event.call_id)
    else if (event.kind === 'approval.requested') approvals.set(event.request_id, event)
    else if (event.kind === 'approval.resolved') approvals.delete(event.request_id)
  }
  const closing: TurnEvent[] = []
  for (const a of approvals.values()) {
    closing.push({ kind: 'approval.resolved', request_id: a.request_id, call_id: a.call_id, decision: 'cancelled', decided_by: 'runtime' })
    if (record.approvals.some((e) => e.request_id === a.request_id)) continue
    const entry: ApprovalAuditEntry = {
      request_id: a.request_id, call_id: a.call_id, tool: a.name, arguments_summary: a.summary,
      decision: 'cancelled', decided_by: 'runtime', channel: 'runtime', principal: 'runtime', timestamp: now
    }
    record.approvals.push(entry)
  }
  for (const { event: c, iteration: n, index } of calls.values()) {
    closing.push({ kind: 'tool_result', call_id: c.call_id, name: c.name, success: false, status: 'interrupted', output: INTERRUPTED_TOOL_OUTPUT, duration_ms: 0 })
    if (record.tool_calls.some((t) => t.call_id === c.call_id)) continue
    const call: ToolCallRecord = {
      call_id: c.call_id, iteration: n, index, name: c.name, arguments: c.arguments,
      status: 'interrupted', success: false, output: INTERRUPTED_TOOL_OUTPUT, duration_ms: 0
    }
    if (c.provider_call_id !== undefined) call.provider_call_id = c.provider_call_id
    record.tool_calls.push(call)
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
}

/** Bound on the pages of one turn's log read back (each up to turns.max_events_per_turn). */
const MAX_LOG_PAGES = 100

/** The turn's retained log after `afterSeq`, page by page; what cannot be read is simply absent. */
export async function readLog (bus: EventLog, turnId: string, afterSeq = 0): Promise<BusEnvelope[]> {
  const events: BusEnvelope[] = []
  for (let page = 0; page < MAX_LOG_PAGES; page++) {
    const replay = await bus.replay(turnId, events.at(-1)?.seq ?? afterSeq).catch(() => null)
    if (replay?.kind !== 'events' || replay.events.length === 0) break
    events.push(...replay.events)
  }
  return events
}

/** Ends one orphaned turn; answers false when another instance got there first. */
export async function interruptOrphan (ctx: RecoveryContext, orphan: RunningTurn): Promise<boolean> {
  const turn = await ctx.store.getTurn(orphan.turnId)
  if (turn === null || turn.status !== 'running') return false
  const events = await readLog(ctx.bus, turn.turn_id)
  const known = await ctx.bus.lastSeq(turn.turn_id).catch(() => 0)
  const lastSeq = Math.max(turn.last_seq, events.at(-1)?.seq ?? 0, known)
  const now = new Date().toISOString()
  const record = structuredClone(turn)
  // Nothing of an ended turn waits any more, whatever its last checkpoint listed.
  record.pending_approvals = []
  const terminal = events.find((e) => TERMINAL_EVENT_KINDS.has(e.event.kind))
  let closing: TurnEvent[] = []
  if (terminal !== undefined) {
    adoptTerminal(record, terminal.event)
  } else {
    closing = closeOpenWork(events, record, now)
    closing.push({ kind: 'turn.failed', code: 'INTERRUPTED', message: INTERRUPTED_MESSAGE })
    record.status = 'interrupted'
    record.error = { code: 'INTERRUPTED', message: INTERRUPTED_MESSAGE }
  }
  const envelopes: BusEnvelope[] = closing.map((event, i) => ({
    turn_id: turn.turn_id, session_id: turn.session_id, seq: lastSeq + 1 + i, ts: now, event
  }))
  record.last_seq = envelopes.at(-1)?.seq ?? lastSeq
  record.updated_at = now
  if (!await ctx.store.interruptTurn(record, orphan.instanceId)) return false
  for (const e of envelopes) ctx.bus.publish(e)
  ctx.log.warn({ turn_id: turn.turn_id, session_id: turn.session_id, dead_instance: orphan.instanceId, status: record.status }, 'ended a turn whose gateway instance had stopped')
  return true
}
