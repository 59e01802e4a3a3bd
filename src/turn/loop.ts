/**
 * Loop control: the model sees tool results and continues until it returns final text, the turn
 * is cancelled, a guard aborts it, or the iteration cap is reached.
 */
import { TurnFailure, type TurnFailureCode } from '../core/errors.js'
import type { ObserverCorrelation } from '../observe/observer.js'
import { ProviderError, type ChatResponse } from '../providers/types.js'
import { scrubText } from '../core/security/redact.js'
import type { ResolvedAgentExecution, TurnState } from './context.js'
import type { ReopenedGate } from './approve.js'
import { newRound, type LoopCheckpoints, type LoopCursor, type LoopEntry, type RecoveredCall, type RoundCursor } from './cursor.js'
import { dispatchRound, parallelEligible } from './dispatch.js'
import { appendRound } from './history.js'
import { costOf, worstCaseOf } from './cost.js'
import { estimateInputTokens } from './spending.js'
import { reserveCall } from './budget-gate.js'
import { parseResponse, type ParsedResponse } from './parse.js'
import { prepareRound } from './prepare.js'
import { buildIterationRequest } from './prompt.js'
import { collectRound } from './results.js'
import { createThinkFilter } from './stream-filter.js'
import { detectToolProtocolIssue, stripTerminalMarkers, stripThinkBlocks, stripToolResultBlocks } from './text-protocol/index.js'

export type TurnOutcome =
  | { status: 'completed', finalText: string }
  | { status: 'cancelled', reason: string }
  | { status: 'failed', code: TurnFailureCode, message: string }
  /** Stopped at a safe point because the gateway is stopping; its checkpoint resumes it. */
  | { status: 'suspended' }

/** A durable turn's loop: where it reports safe points, and where a resumed turn comes back in. */
export interface LoopDurability {
  checkpoints?: LoopCheckpoints
  entry?: LoopEntry
  /**
   * The first iteration's event and its checkpoint at the model call were written with the
   * turn's creation (one transaction): the loop starts at that model call without writing them.
   */
  announced?: boolean
}

export const MAX_MALFORMED_PROTOCOL_RETRIES = 2

export const PARSE_ERROR_FEEDBACK = '[Tool call parse error]\nYour previous response looked like an internal tool-call protocol payload, but the gateway could not parse it into a valid tool call. Use the supported tool-call schema, or answer in natural language if no tool is needed.'

export const MALFORMED_FALLBACK_TEXT = 'I generated an internal tool-call format error and could not complete this request. Please try again.'

export const MAX_ITERATIONS_PROMPT = 'You have reached the maximum number of tool iterations. Please provide your best answer based on the work completed so far. Summarize what you accomplished and what remains to be done.'

/** Why a turn's signal fired; the gateway aborts with one of these. */
export class CancelReason extends Error {
  constructor (readonly reason: string) {
    super(reason)
    this.name = 'CancelReason'
  }
}

function cancelled (state: TurnState): TurnOutcome {
  const reason = state.signal.reason
  return { status: 'cancelled', reason: reason instanceof CancelReason ? reason.reason : 'cancelled' }
}

/** Visible text streamed as it arrives, minus reasoning blocks; `shown` says whether any went out. */
interface LiveText {
  push: (text: string) => void
  shown: () => boolean
}

function liveText (state: TurnState): LiveText {
  const filter = createThinkFilter()
  let shown = false
  return {
    push: (text) => {
      const visible = filter.push(text)
      if (visible === '') return
      shown = true
      state.emit({ kind: 'text.delta', text: visible })
    },
    shown: () => shown
  }
}

function receiptsBlock (exec: ResolvedAgentExecution, state: TurnState, text: string): string {
  if (exec.receipts?.showInResponse !== true || state.receipts.length === 0) return text
  const block = `---\nTool receipts:${state.receipts.map((r) => `\n  ${r}`).join('')}`
  return text === '' ? block : `${text}\n\n${block}`
}

function correlationOf (exec: ResolvedAgentExecution, state: TurnState): ObserverCorrelation {
  return { turn_id: state.turnId, session_id: state.sessionId, agent: exec.agent, channel: exec.channel }
}

/** A stable, low-cardinality name for why a model request failed (`error.type` on its span). */
function errorType (err: unknown): string {
  if (err instanceof ProviderError) return err.code
  return err instanceof Error ? err.name : 'unknown'
}

async function callModel (
  exec: ResolvedAgentExecution, state: TurnState, request: ReturnType<typeof buildIterationRequest>, live: LiveText | null
): Promise<ChatResponse> {
  const { provider, model } = exec.model
  const correlation = correlationOf(exec, state)
  const { price } = exec.model
  // Reserved before the call is announced: a call the budget refuses is never made.
  const reservation = price === null || state.spending === undefined
    ? null
    : await reserveCall(exec, state, state.spending, worstCaseOf(
      price, estimateInputTokens(request.messages, request.useNative ? request.specs : []), exec.model.maxOutputTokens
    ))
  exec.observer.record({
    kind: 'llm_request', provider: provider.name, provider_kind: provider.kind, model, messages: request.messages.length,
    tools: request.useNative ? request.specs.length : 0,
    ...(provider.endpoint === undefined ? {} : { server_address: provider.endpoint.address, server_port: provider.endpoint.port }),
    ...correlation
  })
  const started = performance.now()
  let response: ChatResponse
  try {
    response = await provider.chat({
      model,
      messages: request.messages,
      ...(request.useNative ? { tools: request.specs } : {}),
      ...(exec.model.temperature === undefined ? {} : { temperature: exec.model.temperature })
    }, {
      signal: state.signal,
      ...(live === null ? {} : { onTextDelta: live.push }),
      onRetry: (retry) => { state.log.warn({ provider: provider.name, model, ...retry }, 'retrying the model call') }
    })
  } catch (err) {
    // A failed call reported no usage: its reservation is released rather than guessed at.
    await reservation?.settle(0, false)
    if (!state.signal.aborted) {
      exec.observer.record({
        kind: 'llm_response', provider: provider.name, model, duration_ms: performance.now() - started, success: false,
        error: scrubText((err as Error).message), error_type: errorType(err), ...correlation
      })
    }
    throw err
  }
  const cost = costOf(price, response.usage)
  state.recordCallUsage(response.usage, cost)
  await reservation?.settle(cost, true)
  exec.observer.record({
    kind: 'llm_response', provider: provider.name, model, duration_ms: performance.now() - started, success: true,
    ...(cost === null ? {} : { cost_usd: cost }),
    ...(state.tenant === undefined ? {} : { tenant: state.tenant }),
    ...(response.usage?.input_tokens === undefined ? {} : { input_tokens: response.usage.input_tokens }),
    ...(response.usage?.output_tokens === undefined ? {} : { output_tokens: response.usage.output_tokens }),
    ...(response.id === undefined ? {} : { response_id: response.id }),
    ...(response.model === undefined ? {} : { response_model: response.model }),
    ...(response.finishReason === undefined ? {} : { finish_reason: response.finishReason }),
    ...correlation
  })
  return response
}

function providerFailure (err: unknown): TurnOutcome {
  if (err instanceof ProviderError) return { status: 'failed', code: err.code, message: err.message }
  if (err instanceof TurnFailure) return { status: 'failed', code: err.code, message: err.message }
  return { status: 'failed', code: 'INTERNAL', message: `unexpected error: ${(err as Error).message}` }
}

function isSemanticallyEmpty (parsed: ParsedResponse): boolean {
  return parsed.calls.length === 0 && parsed.text.trim() === ''
}

export async function runToolLoop (exec: ResolvedAgentExecution, state: TurnState, durability: LoopDurability = {}): Promise<TurnOutcome> {
  try {
    return await loop(exec, state, durability)
  } catch (err) {
    if (state.signal.aborted) return cancelled(state)
    return providerFailure(err)
  }
}

const SUSPENDED: TurnOutcome = { status: 'suspended' }

/** The model's response of one iteration made into a round, or the turn's end. */
type Answer = { kind: 'round', round: RoundCursor } | { kind: 'retry' } | { kind: 'end', outcome: TurnOutcome }

async function askModel (exec: ResolvedAgentExecution, state: TurnState, cursor: LoopCursor): Promise<Answer> {
  const request = buildIterationRequest(exec, state.history, state.systemNotes)
  // Native providers stream visible text live; text-protocol output would leak call payloads,
  // so it is shown only after parsing.
  const live = request.useNative ? liveText(state) : null
  const response = await callModel(exec, state, request, live)
  const parsed = parseResponse(response, {
    advertised: new Set(request.specs.map((s) => s.name)),
    strict: exec.knobs.strictToolParsing,
    bounds: exec.knobs.argumentBounds
  })

  if (parsed.parseIssue) {
    cursor.malformed += 1
    if (cursor.malformed <= MAX_MALFORMED_PROTOCOL_RETRIES) {
      state.history.push({ role: 'user', content: PARSE_ERROR_FEEDBACK })
      return { kind: 'retry' }
    }
    state.emit({ kind: 'text.delta', text: MALFORMED_FALLBACK_TEXT })
    state.history.push({ role: 'assistant', content: MALFORMED_FALLBACK_TEXT })
    return { kind: 'end', outcome: { status: 'completed', finalText: MALFORMED_FALLBACK_TEXT } }
  }
  if (isSemanticallyEmpty(parsed)) {
    return { kind: 'end', outcome: { status: 'failed', code: 'EMPTY_COMPLETION', message: 'the model returned neither text nor tool calls' } }
  }
  // A provider that answered in one piece (`stream = false`, or a server that ignores the request
  // to stream) streamed nothing: its text goes out whole, as text-protocol text does.
  if (live?.shown() !== true && parsed.displayText !== '') state.emit({ kind: 'text.delta', text: parsed.displayText })

  if (parsed.calls.length === 0) {
    state.history.push({ role: 'assistant', content: response.text })
    return { kind: 'end', outcome: { status: 'completed', finalText: receiptsBlock(exec, state, parsed.displayText) } }
  }
  return { kind: 'round', round: newRound(response.text, parsed.native, parsed.calls, parallelEligible(exec, parsed.calls)) }
}

async function loop (exec: ResolvedAgentExecution, state: TurnState, durability: LoopDurability): Promise<TurnOutcome> {
  const { checkpoints } = durability
  let entry = durability.entry
  const cursor: LoopCursor = checkpoints?.cursor ?? { step: 'model', malformed: 0, round: null }
  cursor.malformed = entry?.malformed ?? 0
  const first = entry === undefined ? 0 : entry.iteration - 1
  for (let i = first; i < exec.knobs.maxIterations; i++) {
    if (state.signal.aborted) return cancelled(state)
    let round: RoundCursor
    let reopen: ReopenedGate | undefined
    let recovered: ReadonlyMap<string, RecoveredCall> | undefined
    if (entry !== undefined && entry.step !== 'model') {
      // Resumed inside a round: its model response was parsed before the restart.
      state.iteration = entry.iteration
      round = entry.round
      if (entry.step === 'approval') reopen = { request: entry.request, resolved: entry.resolved }
      else recovered = entry.recovered
    } else {
      if (entry === undefined) {
        state.iteration = i + 1
        const announced = i === first && durability.announced === true
        if (!announced) state.emit({ kind: 'iteration', n: state.iteration })
        exec.observer.record({ kind: 'iteration', n: state.iteration, delegate_depth: exec.delegateDepth, ...correlationOf(exec, state) })
        cursor.step = 'model'
        cursor.round = null
        if (announced ? checkpoints?.stopping() === true : checkpoints?.reached('model') === false) return SUSPENDED
      } else {
        // Resumed at a model call: its iteration event is in the log, the call is simply made again.
        state.iteration = entry.iteration
      }
      const answer = await askModel(exec, state, cursor)
      if (answer.kind === 'end') return answer.outcome
      if (answer.kind === 'retry') {
        entry = undefined
        continue
      }
      round = answer.round
    }
    entry = undefined
    cursor.round = round
    if (recovered === undefined) {
      cursor.step = 'prepare'
      await prepareRound(exec, state, round, reopen)
      cursor.step = 'dispatch'
      if (checkpoints !== undefined) {
        if (!checkpoints.reached('dispatch')) return SUSPENDED
        // Before anything runs, the round's checkpoint is stored (one commit per round): a restart
        // then knows every call of the round may have started, and runs none of them again.
        if (round.slots.some((s) => s.prefill === null)) await checkpoints.stored()
      }
    }
    cursor.step = 'dispatch'
    await dispatchRound(exec, state, round.slots, round.parallel, recovered)
    cursor.step = 'collect'
    const verdict = state.signal.aborted ? { kind: 'continue' as const } : collectRound(exec, state, round.slots, round.originalArgs)
    appendRound(state.history, { text: round.text, native: round.native, calls: round.calls, slots: round.slots })
    if (state.signal.aborted) return cancelled(state)
    if (verdict.kind === 'abort') return { status: 'failed', code: verdict.code, message: verdict.message }
  }
  return await maxIterationExit(exec, state)
}

async function maxIterationExit (exec: ResolvedAgentExecution, state: TurnState): Promise<TurnOutcome> {
  const n = exec.knobs.maxIterations
  const capMessage = `Agent exceeded maximum tool iterations (${n})`
  if (exec.knobs.maxIterationBehavior === 'error') return { status: 'failed', code: 'MAX_ITERATIONS', message: capMessage }

  state.history.push({ role: 'user', content: MAX_ITERATIONS_PROMPT })
  let response: ChatResponse
  try {
    response = await callModel(exec, state, buildIterationRequest(exec, state.history, state.systemNotes, false), null)
  } catch (err) {
    state.history.pop()
    if (state.signal.aborted) return cancelled(state)
    return { status: 'failed', code: 'MAX_ITERATIONS', message: `${capMessage}; the final summary failed: ${(err as Error).message}` }
  }
  const raw = stripTerminalMarkers(stripThinkBlocks(response.text))
  if (raw.trim() === '') {
    state.history.pop()
    return { status: 'failed', code: 'MAX_ITERATIONS', message: capMessage }
  }
  const display = detectToolProtocolIssue(raw, new Set()) ? MALFORMED_FALLBACK_TEXT : stripToolResultBlocks(raw).trim()
  state.history.push({ role: 'assistant', content: response.text })
  const segment = `${display}\n\n*Turn stopped: reached maximum tool iterations (${n}).*`
  state.emit({ kind: 'text.delta', text: segment })
  return { status: 'completed', finalText: receiptsBlock(exec, state, segment) }
}
