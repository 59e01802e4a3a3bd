/**
 * The way back into a durable turn after a restart: its loop state rebuilt from the checkpoint,
 * and the events written after the checkpoint read for what they settle — calls that finished or
 * started, an approval answered before the process stopped.
 */
import type { ToolCallRecord } from '../../schemas/turn.js'
import type { BusEnvelope } from '../bus/bus.js'
import type { ChatMessage } from '../providers/types.js'
import type { TurnRecord } from '../store/store.js'
import type { ResolvedAgentExecution, TurnState } from '../turn/context.js'
import { newRound, type LoopEntry, type RecoveredCall, type ResolvedApproval, type RoundCursor } from '../turn/cursor.js'
import { resolveTool } from '../turn/prepare.js'
import { unexecuted, type ToolSlot } from '../turn/results.js'
import type { CheckpointDoc, RoundDoc } from './checkpoint.js'

/** The turn's history: the session's part as the turn began it, then what the loop appended. */
export function resumedHistory (start: ChatMessage[], doc: CheckpointDoc): ChatMessage[] {
  return [...start.slice(0, doc.turn.history_base), ...doc.appended]
}

/** Activated deferred tools and loop bookkeeping, as the checkpoint holds them. */
export function restoreLoopState (exec: ResolvedAgentExecution, state: TurnState, doc: CheckpointDoc): void {
  for (const name of doc.activated) {
    const tool = exec.deferred?.lookup(name)
    if (tool !== undefined) exec.activated?.activate(tool)
  }
  const { loop } = doc
  for (const s of loop.dedup) state.dedupSignatures.add(s)
  for (const s of loop.prompt_shell) state.promptShellSignatures.add(s)
  state.loopDetector.restore(loop.detector)
  state.systemNotes.push(...loop.notes)
  state.startedAt = loop.started_at
  state.lastOutputHash = loop.last_output_hash
  state.identicalOutputCount = loop.identical
  state.receipts.push(...loop.receipts)
  state.iteration = doc.iteration
}

function restoreRound (exec: ResolvedAgentExecution, doc: RoundDoc): RoundCursor {
  const round = newRound(doc.text, doc.native, doc.calls, doc.parallel)
  round.originalArgs = doc.original_args
  round.shellSignatures = new Set(doc.shell_signatures)
  round.searchPending = doc.search_pending
  round.next = doc.next
  round.slots = doc.slots.map((s): ToolSlot => {
    const slot: ToolSlot = {
      index: s.index, callId: s.call_id, providerCallId: s.provider_call_id, name: s.name, arguments: s.arguments,
      tool: null, prefill: s.prefill, unavailable: s.unavailable, announced: false, outcome: null
    }
    if (s.tool !== null) {
      const tool = resolveTool(exec, s.tool) ?? exec.deferred?.lookup(s.tool)
      // Configuration changed across the restart and the tool is gone: the call cannot run.
      if (tool === undefined) slot.prefill = unexecuted('error', `Tool not available in this turn: ${s.tool}`)
      else slot.tool = tool
    }
    return slot
  })
  return round
}

/** What the log after the checkpoint says of each call of the round. */
function recoveredCalls (round: RoundCursor, events: readonly BusEnvelope[]): Map<string, RecoveredCall> {
  const ours = new Set(round.slots.map((s) => s.callId))
  const found = new Map<string, RecoveredCall>()
  for (const { event } of events) {
    if (event.kind === 'tool_call' && ours.has(event.call_id) && !found.has(event.call_id)) found.set(event.call_id, { kind: 'started' })
    if (event.kind === 'tool_result' && ours.has(event.call_id)) {
      found.set(event.call_id, {
        kind: 'settled',
        status: event.status,
        success: event.success,
        output: event.output,
        error: event.error ?? null,
        receipt: event.receipt ?? null,
        durationMs: event.duration_ms
      })
    }
  }
  return found
}

function resolvedApproval (requestId: string, events: readonly BusEnvelope[], owner: string): ResolvedApproval | null {
  for (const { event } of events) {
    if (event.kind === 'approval.resolved' && event.request_id === requestId) {
      return { decision: event.decision, decidedBy: event.decided_by, principal: owner }
    }
  }
  return null
}

/** Where the loop comes back in; `events` are the turn's events after the checkpoint. */
export function loopEntry (exec: ResolvedAgentExecution, doc: CheckpointDoc, events: readonly BusEnvelope[], owner: string): LoopEntry {
  const { iteration, malformed } = doc
  if (doc.step === 'model' || doc.round === undefined) return { step: 'model', iteration, malformed }
  const round = restoreRound(exec, doc.round)
  if (doc.step === 'approval' && doc.waiting !== undefined) {
    round.waiting = { call: doc.waiting.call, tool: doc.waiting.tool }
    const { request } = doc.waiting
    return { step: 'approval', iteration, malformed, round, request, resolved: resolvedApproval(request.request_id, events, owner) }
  }
  round.next = round.calls.length
  return { step: 'dispatch', iteration, malformed, round, recovered: recoveredCalls(round, events) }
}

/** The channel an answer came through, from who the log says decided it. */
function channelOf (decidedBy: string): string {
  const prefix = decidedBy.slice(0, decidedBy.indexOf(':'))
  if (prefix === 'ws') return 'websocket'
  return ['rest', 'ag-ui', 'ai-sdk'].includes(prefix) ? prefix : 'runtime'
}

/**
 * Tool calls and approval answers the log shows but the stored record does not (it was saved
 * before them): added as the log has them, so the resumed turn's record is complete.
 */
export function reconcileRecord (record: TurnRecord, log: readonly BusEnvelope[]): void {
  const calls = new Set(record.tool_calls.map((c) => c.call_id))
  const answers = new Set(record.approvals.map((a) => a.request_id))
  const cards = new Map<string, { name: string, arguments: Record<string, unknown>, provider_call_id?: string }>()
  const requests = new Map<string, { tool: string, summary: string }>()
  let iteration = 1
  let index = 0
  for (const { event, ts } of log) {
    if (event.kind === 'iteration') {
      iteration = event.n
      index = 0
    } else if (event.kind === 'tool_call') {
      cards.set(event.call_id, event)
    } else if (event.kind === 'approval.requested') {
      requests.set(event.request_id, { tool: event.name, summary: event.summary })
    } else if (event.kind === 'tool_result') {
      const position = index++
      if (calls.has(event.call_id)) continue
      const card = cards.get(event.call_id)
      const call: ToolCallRecord = {
        call_id: event.call_id, iteration, index: position, name: event.name, arguments: card?.arguments ?? {},
        status: event.status, success: event.success, output: event.output, duration_ms: event.duration_ms,
        ...(card?.provider_call_id === undefined ? {} : { provider_call_id: card.provider_call_id }),
        ...(event.error === undefined ? {} : { error: event.error }),
        ...(event.receipt === undefined ? {} : { receipt: event.receipt }),
        ...(event.truncated === undefined ? {} : { truncated: event.truncated }),
        ...(event.original_bytes === undefined ? {} : { original_bytes: event.original_bytes })
      }
      record.tool_calls.push(call)
    } else if (event.kind === 'approval.resolved' && !answers.has(event.request_id)) {
      const request = requests.get(event.request_id)
      const channel = channelOf(event.decided_by)
      record.approvals.push({
        request_id: event.request_id, call_id: event.call_id, tool: request?.tool ?? '', arguments_summary: request?.summary ?? '',
        decision: event.decision, decided_by: event.decided_by, channel, principal: channel === 'runtime' ? 'runtime' : record.owner,
        timestamp: ts
      })
    }
  }
}
