/**
 * The way back into a durable turn after a restart: its loop state rebuilt from the checkpoint,
 * and the events written after the checkpoint read for what they settle — calls that finished or
 * started, an approval answered before the process stopped.
 */
import type { BusEnvelope } from '../bus/bus.js'
import type { ChatMessage } from '../providers/types.js'
import type { ResolvedAgentExecution, TurnState } from '../turn/context.js'
import { newRound, type LoopEntry, type RecoveredCall, type ResolvedApproval, type RoundCursor } from '../turn/cursor.js'
import { resolveTool } from '../turn/prepare.js'
import { unexecuted, type ToolSlot } from '../turn/results.js'
import { SteeringQueue } from '../turn/steering.js'
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
  if (doc.provider_state !== undefined) round.providerState = doc.provider_state
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

/**
 * What became of each call of the round: settled as its `tool_result` in the log says, or — a call
 * that would run, without a result — possibly started: the round's checkpoint was stored before
 * any of its tools ran, but the cards of the last moments before the stop may not have been, so
 * such a call is never run again. Calls decided in preparation (denied, deduplicated…) ran nothing
 * and are settled as decided.
 */
function recoveredCalls (round: RoundCursor, events: readonly BusEnvelope[]): Map<string, RecoveredCall> {
  const ours = new Set(round.slots.map((s) => s.callId))
  const found = new Map<string, RecoveredCall>()
  for (const slot of round.slots) if (slot.prefill === null) found.set(slot.callId, { kind: 'started', announced: false })
  for (const { event } of events) {
    if (event.kind === 'tool_call' && found.get(event.call_id)?.kind === 'started') found.set(event.call_id, { kind: 'started', announced: true })
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

/** Where the loop comes back in; `events` are the turn's log (call and request ids are unique within it). */
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

/**
 * The turn's steering queue after a restart: every `user.message` in its log was offered; those
 * past the checkpoint's count had not joined the history it holds, so they wait again (as the log
 * recorded them: scrubbed).
 */
export function resumedSteering (max: number, doc: CheckpointDoc, events: readonly BusEnvelope[]): SteeringQueue {
  const messages: string[] = []
  for (const { event } of events) if (event.kind === 'user.message') messages.push(event.message)
  const consumed = Math.min(doc.steered ?? 0, messages.length)
  const queue = new SteeringQueue(max, { offered: messages.length, consumed })
  for (const message of messages.slice(consumed)) queue.restore(message)
  return queue
}
