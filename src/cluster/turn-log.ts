/**
 * What a turn's event log tells beyond its saved record. A running turn's record is saved at its
 * start, at approval waits and decisions, and at its end — not per tool call — so the log is where
 * the rest of its progress lives: its iterations, the calls that settled since the last save, its
 * last seq. Recovery ends a crashed turn from it, and a read of a turn that runs elsewhere (or
 * whose instance died) shows it.
 */
import type { TurnEvent } from '../../schemas/events.js'
import type { ToolCallRecord } from '../../schemas/turn.js'
import type { BusEnvelope } from '../bus/bus.js'
import type { TurnJournal } from '../journal/journal.js'
import type { TurnRecord } from '../store/store.js'

type Event<K extends TurnEvent['kind']> = Extract<TurnEvent, { kind: K }>

/** A `tool_call` of the log with where it stood: its round, and its place among the round's cards. */
export interface LoggedCall {
  event: Event<'tool_call'>
  iteration: number
  index: number
  result: Event<'tool_result'> | null
}

export interface LogSummary {
  /** Every call the log announced, in log order, with its result if it has one. */
  calls: Map<string, LoggedCall>
  /** Approval requests without a resolution, in log order. */
  openApprovals: Map<string, Event<'approval.requested'>>
  /** The highest `iteration` n (0 when none). */
  iterations: number
  terminal: BusEnvelope | null
  last: BusEnvelope | null
}

export function summarizeLog (events: readonly BusEnvelope[]): LogSummary {
  const summary: LogSummary = { calls: new Map(), openApprovals: new Map(), iterations: 0, terminal: null, last: null }
  let iteration = 1
  let position = 0
  for (const envelope of events) {
    const { event } = envelope
    summary.last = envelope
    switch (event.kind) {
      case 'iteration':
        iteration = event.n
        position = 0
        summary.iterations = Math.max(summary.iterations, event.n)
        break
      case 'tool_call':
        // Sequential rounds stream cards in model order; a parallel round announces the calls
        // preparation settled before the ones that run, so there this is the best position the log can tell.
        summary.calls.set(event.call_id, { event, iteration, index: position++, result: null })
        break
      case 'tool_result': {
        const call = summary.calls.get(event.call_id)
        if (call !== undefined) call.result = event
        break
      }
      case 'approval.requested':
        summary.openApprovals.set(event.request_id, event)
        break
      case 'approval.resolved':
        summary.openApprovals.delete(event.request_id)
        break
      case 'turn.completed':
      case 'turn.cancelled':
      case 'turn.failed':
        summary.terminal ??= envelope
        break
      // Nothing the rebuilt record keeps (a steering message is in the history the checkpoint keeps).
      case 'turn.started':
      case 'turn.resumed':
      case 'text.delta':
      case 'tool.progress':
      case 'user.message':
      case 'reasoning.delta':
      case 'model.fallback':
        break
      default: {
        // A new event kind fails to compile here until the rebuild decides what it keeps of it.
        const unsummarized: never = event
        return unsummarized
      }
    }
  }
  return summary
}

/** The record entry of a settled call, as the running turn recorded it (settleSlot). */
function callRecord (call: LoggedCall, result: Event<'tool_result'>): ToolCallRecord {
  const { event } = call
  return {
    call_id: event.call_id,
    iteration: call.iteration,
    index: call.index,
    name: result.name,
    arguments: event.arguments,
    status: result.status,
    success: result.success,
    output: result.output,
    duration_ms: result.duration_ms,
    ...(event.provider_call_id === undefined ? {} : { provider_call_id: event.provider_call_id }),
    ...(result.error === undefined ? {} : { error: result.error }),
    ...(result.receipt === undefined ? {} : { receipt: result.receipt }),
    ...(result.truncated === undefined ? {} : { truncated: result.truncated }),
    ...(result.original_bytes === undefined ? {} : { original_bytes: result.original_bytes })
  }
}

/** Adds a call to the record's list in model order (round, then place), as the running turn keeps it. */
export function insertCall (calls: ToolCallRecord[], call: ToolCallRecord): void {
  const at = calls.findIndex((c) => c.iteration > call.iteration || (c.iteration === call.iteration && c.index > call.index))
  if (at === -1) calls.push(call)
  else calls.splice(at, 0, call)
}

/**
 * A copy of `saved` with what its log adds: iterations, the settled calls the record does not
 * list yet, the last seq and the time of the last event. What the record already lists wins.
 */
export function withLoggedProgress (saved: TurnRecord, summary: LogSummary): TurnRecord {
  const record: TurnRecord = {
    ...saved, tool_calls: [...saved.tool_calls], approvals: [...saved.approvals], pending_approvals: [...saved.pending_approvals]
  }
  record.iterations = Math.max(record.iterations, summary.iterations)
  const listed = new Set(record.tool_calls.map((c) => c.call_id))
  for (const call of summary.calls.values()) {
    if (call.result !== null && !listed.has(call.event.call_id)) insertCall(record.tool_calls, callRecord(call, call.result))
  }
  const last = summary.last
  if (last !== null && last.seq > record.last_seq) {
    record.last_seq = last.seq
    record.updated_at = last.ts
  }
  return record
}

/** Bound on the pages of one turn's log read back (each up to turns.max_events_per_turn). */
const MAX_LOG_PAGES = 100

/** The turn's whole retained log, page by page (the bus's, filled from the store); what cannot be read is simply absent. */
export async function readTurnLog (log: Pick<TurnJournal, 'replay'>, turnId: string): Promise<BusEnvelope[]> {
  const events: BusEnvelope[] = []
  for (let page = 0; page < MAX_LOG_PAGES; page++) {
    const replay = await log.replay(turnId, events.at(-1)?.seq ?? 0).catch(() => null)
    if (replay?.kind !== 'events' || replay.events.length === 0) break
    events.push(...replay.events)
  }
  return events
}
