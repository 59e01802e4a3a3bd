/**
 * Result recording: one ordered slot per model call. Every slot, however it was filled
 * (preparation or execution), goes through `settleSlot`, which normalises the output, signs
 * successful executions, bounds what the model sees and what streams, emits the terminal
 * `tool_result` event and records the call on the turn.
 */
import { randomUUID } from 'node:crypto'
import type { ToolCallStatus } from '../../schemas/events.js'
import type { ToolCallRecord } from '../../schemas/turn.js'
import { digest } from '../core/json/canonical.js'
import { scrubText, scrubValue } from '../core/security/redact.js'
import type { Tool } from '../tools/contract.js'
import type { ResolvedAgentExecution, TurnState } from './context.js'
import { CLIENT_MARKER, truncateToolResult } from './truncate.js'
import { withoutMarker } from './approval-marker.js'

/** Why a call names no runnable tool; `errorType` is the stable `error.type` of its span. */
export interface UnavailableTool {
  errorType: 'unknown_tool' | 'tool_not_available'
  text: string
}

export interface ToolSlot {
  index: number
  callId: string
  providerCallId: string | null
  name: string
  arguments: Record<string, unknown>
  /** The resolved tool, once preparation found one. */
  tool: Tool | null
  /**
   * Decided during preparation (denied, replaced, deduplicated, invalid, hook-cancelled): the tool
   * will not run. Settled (events emitted) when dispatch reaches the slot, so cards stream in
   * model order.
   */
  prefill: RawOutcome | null
  /**
   * Set when preparation found no runnable tool for the name: such a call never runs but is observed
   * (start and failed end records) when dispatch reaches it, in model order.
   */
  unavailable: UnavailableTool | null
  /** True once a `tool_call` event was sent for this slot. */
  announced: boolean
  outcome: SlotOutcome | null
}

export interface RawOutcome {
  status: ToolCallStatus
  success: boolean
  output: string
  error: string | null
  durationMs: number
  /** Only executed calls may be signed; replacements and failures never are. */
  executed: boolean
}

export interface SlotOutcome extends RawOutcome {
  /** What the model sees in history: bounded, then the receipt appended. */
  modelText: string
  receipt: string | null
  truncated: boolean
}

export const NO_OUTPUT = '(no output)'
export const INTERRUPTED_TEXT = '[interrupted by user before this tool produced a result]'
export const NOT_RUN_TEXT = '[not executed: the turn was cancelled before this tool ran]'
export const RESTART_INTERRUPTED_TEXT = '[interrupted: the gateway stopped while this call was running or about to run; whether it ran is unknown, and it was not run again]'

export function newSlot (index: number, name: string, args: Record<string, unknown>, providerCallId: string | null): ToolSlot {
  return {
    index, callId: `call_${randomUUID()}`, providerCallId, name, arguments: args,
    tool: null, prefill: null, unavailable: null, announced: false, outcome: null
  }
}

/** Emits the pending card for a slot; every slot gets exactly one, before its result. */
export function announceSlot (state: TurnState, slot: ToolSlot): void {
  if (slot.announced) return
  slot.announced = true
  const event = {
    kind: 'tool_call' as const,
    call_id: slot.callId,
    name: slot.name,
    arguments: scrubValue(withoutMarker(slot.tool?.name ?? slot.name, slot.arguments)) as Record<string, unknown>,
    status: 'pending' as const
  }
  state.emit(slot.providerCallId === null ? event : { ...event, provider_call_id: slot.providerCallId })
}

/** `max_tool_result_bytes = 0` disables the history bound; the event bound always applies. */
function eventLimit (historyLimit: number, streamLimit: number): number {
  return historyLimit > 0 ? Math.min(historyLimit, streamLimit) : streamLimit
}

export function settleSlot (exec: ResolvedAgentExecution, state: TurnState, slot: ToolSlot, raw: RawOutcome): SlotOutcome {
  const output = raw.success && raw.output === '' ? NO_OUTPUT : raw.output
  let receipt: string | null = null
  if (raw.success && raw.executed && exec.receipts !== null) {
    // Signed over the untruncated normalised output; appended after bounding.
    receipt = exec.receipts.generator.sign({
      turnId: state.turnId, callId: slot.callId, tool: slot.name, arguments: slot.arguments, output
    })
    state.receipts.push(`${slot.name}: ${receipt}`)
    exec.observer.record({
      kind: 'receipt', tool: slot.name, call_id: slot.callId, receipt,
      turn_id: state.turnId, session_id: state.sessionId, agent: exec.agent, channel: exec.channel
    })
  }
  const bounded = truncateToolResult(output, exec.knobs.maxToolResultBytes)
  const modelText = receipt === null ? bounded.text : `${bounded.text}\n\n[receipt: ${receipt}]`
  const outcome: SlotOutcome = { ...raw, output, modelText, receipt, truncated: bounded.truncated }
  slot.outcome = outcome

  announceSlot(state, slot)
  // Scrubbed before it is bounded: a cut through a secret would leave a piece too short to recognise.
  // Bounded once, from the whole output, by the tighter of the two limits: the event shows what the
  // model saw (or less), and its one marker counts what was really dropped from how much.
  const scrubbed = scrubText(output)
  const streamed = truncateToolResult(scrubbed, eventLimit(exec.knobs.maxToolResultBytes, exec.knobs.maxEventOutputBytes), CLIENT_MARKER)
  const eventOutput = streamed.text
  const error = raw.error === null ? undefined : scrubText(raw.error)
  const truncated = bounded.truncated || streamed.truncated
  const size = truncated ? { truncated: true, original_bytes: Buffer.byteLength(scrubbed, 'utf8') } : {}
  state.emit({
    kind: 'tool_result',
    call_id: slot.callId,
    name: slot.name,
    success: raw.success,
    status: raw.status,
    output: eventOutput,
    ...(error === undefined ? {} : { error }),
    duration_ms: Math.max(0, Math.round(raw.durationMs)),
    ...(receipt === null ? {} : { receipt }),
    ...size
  })
  const record: ToolCallRecord = {
    call_id: slot.callId,
    iteration: state.iteration,
    index: slot.index,
    name: slot.name,
    arguments: scrubValue(slot.arguments) as Record<string, unknown>,
    status: raw.status,
    success: raw.success,
    output: eventOutput,
    duration_ms: Math.max(0, Math.round(raw.durationMs)),
    ...(slot.providerCallId === null ? {} : { provider_call_id: slot.providerCallId }),
    ...(error === undefined ? {} : { error }),
    ...(receipt === null ? {} : { receipt }),
    ...size
  }
  state.recordToolCall(record)
  return outcome
}

/**
 * A call settled before a restart, as its `tool_result` event recorded it: what the model sees is
 * the logged (scrubbed, bounded) output plus its receipt; nothing is emitted again.
 */
export function adoptLoggedOutcome (
  state: TurnState, slot: ToolSlot,
  logged: { status: ToolCallStatus, success: boolean, output: string, error: string | null, receipt: string | null, durationMs: number }
): void {
  const modelText = logged.receipt === null ? logged.output : `${logged.output}\n\n[receipt: ${logged.receipt}]`
  if (logged.receipt !== null) state.receipts.push(`${slot.name}: ${logged.receipt}`)
  slot.outcome = {
    status: logged.status, success: logged.success, output: logged.output, error: logged.error, durationMs: logged.durationMs,
    executed: logged.status === 'ok' || logged.status === 'error', modelText, receipt: logged.receipt, truncated: false
  }
  state.recordToolCall({
    call_id: slot.callId,
    iteration: state.iteration,
    index: slot.index,
    name: slot.name,
    arguments: scrubValue(slot.arguments) as Record<string, unknown>,
    status: logged.status,
    success: logged.success,
    output: logged.output,
    duration_ms: Math.max(0, Math.round(logged.durationMs)),
    ...(slot.providerCallId === null ? {} : { provider_call_id: slot.providerCallId }),
    ...(logged.error === null ? {} : { error: logged.error }),
    ...(logged.receipt === null ? {} : { receipt: logged.receipt })
  })
}

/** Outcome of a call that never runs. */
export function unexecuted (
  status: ToolCallStatus, output: string, options: { success?: boolean, error?: string | null } = {}
): RawOutcome {
  const success = options.success ?? false
  const error = options.error === undefined ? (success ? null : output) : options.error
  return { status, success, output, error, durationMs: 0, executed: false }
}

export type RoundVerdict =
  | { kind: 'continue' }
  | { kind: 'abort', code: 'LOOP_DETECTED' | 'IDENTICAL_OUTPUT_LOOP', message: string }

/**
 * Loop control input from one round's ordered results. Only successful calls feed the detectors:
 * a failing tool repeated is the model struggling, not looping on progress-free success.
 */
export function collectRound (
  exec: ResolvedAgentExecution, state: TurnState, slots: readonly ToolSlot[], originalArgs: readonly Record<string,
  unknown>[]
): RoundVerdict {
  const ignore = new Set(exec.knobs.loopDetection.ignore_tools)
  let relevant = ''
  for (const slot of slots) {
    const outcome = slot.outcome
    if (outcome === null || !outcome.success || ignore.has(slot.name)) continue
    relevant += outcome.output
    const verdict = state.loopDetector.record(slot.name, originalArgs[slot.index] ?? slot.arguments, outcome.output)
    if (verdict.kind === 'warning') state.systemNotes.push(`[Loop Detection] ${verdict.message}`)
    else if (verdict.kind === 'block') state.systemNotes.push(`[Loop Detection — BLOCKED] ${verdict.message}`)
    else if (verdict.kind === 'break') return { kind: 'abort', code: 'LOOP_DETECTED', message: `Agent loop aborted by loop detector: ${verdict.message}` }
  }

  const minElapsed = exec.knobs.loopDetection.identical_output_min_elapsed_ms
  if (minElapsed !== null && relevant !== '' && Date.now() - state.startedAt >= minElapsed) {
    const hash = digest(relevant)
    if (hash === state.lastOutputHash) {
      state.identicalOutputCount += 1
    } else {
      state.identicalOutputCount = 0
      state.lastOutputHash = hash
    }
    if (state.identicalOutputCount >= 3) {
      return { kind: 'abort', code: 'IDENTICAL_OUTPUT_LOOP', message: `Agent loop aborted: identical tool output detected ${state.identicalOutputCount} consecutive times` }
    }
  }
  return { kind: 'continue' }
}
