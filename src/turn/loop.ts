/**
 * Loop control: the model sees tool results and continues until it returns final text, the turn
 * is cancelled, a guard aborts it, or the iteration cap is reached. Two ways in, picked by
 * `runToolLoop`: `loop()` runs fresh iterations; `resumeLoop()` finishes the iteration a restart
 * interrupted (a `LoopEntry`, cursor.ts) and then goes on in `loop()` at the next one.
 */
import { TurnFailure, type TurnFailureCode } from '../core/errors.js'
import type { ObserverCorrelation } from '../observe/observer.js'
import { ProviderError, type ChatResponse } from '../providers/types.js'
import { scrubText } from '../core/security/redact.js'
import type { ModelBinding, ResolvedAgentExecution, TurnState } from './context.js'
import type { ReopenedGate } from './approve.js'
import { newRound, type LoopCheckpoints, type LoopCursor, type LoopEntry, type RecoveredCall, type RoundCursor } from './cursor.js'
import { dispatchRound, parallelEligible } from './dispatch.js'
import { appendRound } from './history.js'
import { costOf, worstCaseOf } from '../providers/pricing.js'
import { estimateInputTokens } from './spending.js'
import { reserveCall } from './budget-gate.js'
import { parseResponse, type ParsedResponse } from './parse.js'
import { prepareRound } from './prepare.js'
import { buildIterationRequest } from './prompt.js'
import { collectRound } from './results.js'
import { withFallback, type ProviderAttempt } from './fallback.js'
import { emitAnswerReasoning, emitReasoning } from './reasoning.js'
import { createFrameHoldBack, createThinkFilter, unsentRemainder } from './stream-filter.js'
import { detectToolProtocolIssue, stripTerminalMarkers, stripThinkBlocks, stripToolResultBlocks } from './text-protocol/index.js'

export type TurnOutcome =
  | { status: 'completed', finalText: string }
  | { status: 'cancelled', reason: string }
  | { status: 'failed', code: TurnFailureCode, message: string }
  /** Stopped at a safe point because the gateway is stopping; its checkpoint resumes it. */
  | { status: 'parked' }

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

/**
 * Visible text streamed as it arrives, minus reasoning blocks and, for the text protocol, minus
 * anything that could be a call frame; `shown` is what went out.
 */
interface LiveText {
  push: (text: string) => void
  shown: () => string
  /** Whether any text came through `push` (its think blocks then went out as reasoning already). */
  received: () => boolean
}

function liveText (exec: ResolvedAgentExecution, state: TurnState, textProtocol: boolean): LiveText {
  const think = createThinkFilter()
  const frames = textProtocol ? createFrameHoldBack() : null
  let shown = ''
  let received = false
  return {
    push: (text) => {
      received = true
      const { visible: thought, reasoning } = think.push(text)
      emitReasoning(exec, state, reasoning)
      const visible = frames === null || thought === '' ? thought : frames.push(thought)
      if (visible === '') return
      shown += visible
      state.emit({ kind: 'text.delta', text: visible })
    },
    shown: () => shown,
    received: () => received
  }
}

/**
 * The visible text of a response that has not gone out live: all of it when nothing streamed (a
 * provider that answered in one piece), the held-back tail for the text protocol. Native streams
 * showed their text as the provider sent it.
 */
function unsentText (live: LiveText, textProtocol: boolean, display: string): string {
  const shown = live.shown()
  if (shown === '') return display
  if (!textProtocol) return ''
  return unsentRemainder(shown, display) ?? ''
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
  return await withFallback(exec, state, async (binding, attempt) => await callProvider(exec, state, binding, request, live, attempt))
}

/** One provider's try at the model call (its own retries included), observed as one chat. */
async function callProvider (
  exec: ResolvedAgentExecution, state: TurnState, binding: ModelBinding, request: ReturnType<typeof buildIterationRequest>,
  live: LiveText | null, attempt: ProviderAttempt
): Promise<ChatResponse> {
  const { provider, model } = binding
  const correlation = correlationOf(exec, state)
  const { price } = binding
  // Reserved before the call is announced: a call the budget refuses is never made.
  const reservation = price === null || state.spending === undefined
    ? null
    : await reserveCall(exec, state, state.spending, worstCaseOf(
      price, estimateInputTokens(request.messages, request.useNative ? request.specs : []), binding.maxOutputTokens
    ))
  exec.observer.record({
    kind: 'llm_request', provider: provider.name, provider_kind: provider.kind, model, messages: request.messages.length,
    tools: request.useNative ? request.specs.length : 0,
    ...(provider.endpoint === undefined ? {} : { server_address: provider.endpoint.address, server_port: provider.endpoint.port }),
    ...(attempt.fallbackFrom === undefined ? {} : { fallback_from: attempt.fallbackFrom }),
    ...correlation
  })
  const started = performance.now()
  let response: ChatResponse
  try {
    response = await provider.chat({
      model,
      messages: request.messages,
      ...(request.useNative ? { tools: request.specs } : {}),
      ...(binding.temperature === undefined ? {} : { temperature: binding.temperature })
    }, {
      signal: state.signal,
      ...(live === null ? {} : { onTextDelta: (text) => { attempt.streamed = true; live.push(text) } }),
      onReasoningDelta: (text) => {
        attempt.streamed = true
        emitReasoning(exec, state, text)
      },
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
  state.recordCallUsage(response.usage, cost, provider.name)
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

/**
 * Runs a turn's loop to its outcome: from its first iteration, or, for a turn resumed after a
 * restart, from where its checkpoint left it (`durability.entry`).
 */
export async function runToolLoop (exec: ResolvedAgentExecution, state: TurnState, durability: LoopDurability = {}): Promise<TurnOutcome> {
  try {
    const { entry } = durability
    if (entry === undefined) return await loop(exec, state, loopRun(durability, 0), 0, durability.announced === true)
    return await resumeLoop(exec, state, entry, durability)
  } catch (err) {
    if (state.signal.aborted) return cancelled(state)
    return providerFailure(err)
  }
}

const PARKED: TurnOutcome = { status: 'parked' }

/** What every iteration of one run of the loop shares: where it stands, and where it reports safe points. */
interface LoopRun {
  cursor: LoopCursor
  checkpoints: LoopCheckpoints | undefined
}

function loopRun (durability: LoopDurability, malformed: number): LoopRun {
  const { checkpoints } = durability
  const cursor: LoopCursor = checkpoints?.cursor ?? { step: 'model', malformed: 0, round: null }
  cursor.malformed = malformed
  return { cursor, checkpoints }
}

/**
 * The model's response of one iteration made into a round, or the turn's end; `steered`: a final
 * answer while a steering message waits, so the loop goes on to the next iteration with it.
 */
type Answer = { kind: 'round', round: RoundCursor } | { kind: 'retry' } | { kind: 'steered' } | { kind: 'end', outcome: TurnOutcome }

async function askModel (exec: ResolvedAgentExecution, state: TurnState, cursor: LoopCursor, lastIteration: boolean): Promise<Answer> {
  const request = buildIterationRequest(exec, state.history, state.systemNotes)
  // Every request streams its visible text live; text-protocol output goes through the frame
  // hold-back, so no call payload reaches a `text.delta`.
  const textProtocol = !request.useNative
  const live = liveText(exec, state, textProtocol)
  const response = await callModel(exec, state, request, live)
  emitAnswerReasoning(exec, state, response, live.received())
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
  // to stream) streamed nothing: its text goes out whole. Text-protocol text held back as a
  // possible frame goes out now, as far as the parser found it to be prose.
  const unsent = unsentText(live, textProtocol, parsed.displayText)
  if (unsent !== '') state.emit({ kind: 'text.delta', text: unsent })

  if (parsed.calls.length === 0) {
    state.history.push({ role: 'assistant', content: response.text })
    // A message that arrived while the model answered is not dropped: one more iteration reads it.
    if (!lastIteration && state.steering?.pending() === true) return { kind: 'steered' }
    state.steering?.close()
    return { kind: 'end', outcome: { status: 'completed', finalText: receiptsBlock(exec, state, parsed.displayText) } }
  }
  const round = newRound(response.text, parsed.native, parsed.calls, parallelEligible(exec, parsed.calls))
  if (response.providerState !== undefined) round.providerState = response.providerState
  return { kind: 'round', round }
}

/**
 * Fresh iterations, from iteration `from + 1` to the cap: each drains the steering messages into
 * the history, announces itself, reports its model call as a safe point, asks the model and runs
 * the round of its answer. `firstAnnounced`: the first one's event and checkpoint were written
 * with the turn's creation (`LoopDurability.announced`).
 */
async function loop (
  exec: ResolvedAgentExecution, state: TurnState, run: LoopRun, from: number, firstAnnounced: boolean
): Promise<TurnOutcome> {
  const { cursor, checkpoints } = run
  for (let i = from; i < exec.knobs.maxIterations; i++) {
    if (state.signal.aborted) return cancelled(state)
    // Steering messages join the history before the model call (and its checkpoint), in order.
    state.steering?.drainInto(state.history)
    state.iteration = i + 1
    const announced = firstAnnounced && i === from
    if (!announced) state.emit({ kind: 'iteration', n: state.iteration })
    exec.observer.record({ kind: 'iteration', n: state.iteration, delegate_depth: exec.delegateDepth, ...correlationOf(exec, state) })
    cursor.step = 'model'
    cursor.round = null
    if (announced ? checkpoints?.stopping() === true : checkpoints?.reached('model') === false) return PARKED
    const ended = await modelCall(exec, state, run, i + 1 >= exec.knobs.maxIterations)
    if (ended !== null) return ended
  }
  return await maxIterationExit(exec, state)
}

/**
 * The way back into a turn resumed after a restart: the interrupted iteration is finished — its
 * model call made again, its approval gate reopened, or its prepared round dispatched with what
 * the log says became of its calls — and the loop goes on at the next iteration.
 */
async function resumeLoop (
  exec: ResolvedAgentExecution, state: TurnState, entry: LoopEntry, durability: LoopDurability
): Promise<TurnOutcome> {
  const run = loopRun(durability, entry.malformed)
  // The iteration cap was lowered across the restart below where the turn stood.
  if (entry.iteration > exec.knobs.maxIterations) return await maxIterationExit(exec, state)
  if (state.signal.aborted) return cancelled(state)
  // The interrupted iteration's event is in the log: it is not announced again.
  state.iteration = entry.iteration
  let ended: TurnOutcome | null
  if (entry.step === 'model') {
    state.steering?.drainInto(state.history)
    ended = await modelCall(exec, state, run, entry.iteration >= exec.knobs.maxIterations)
  } else if (entry.step === 'approval') {
    // Its model response was parsed before the restart: the round is prepared from the waiting call on.
    ended = await playRound(exec, state, run, entry.round, { request: entry.request, resolved: entry.resolved })
  } else {
    ended = await runPrepared(exec, state, run, entry.round, entry.recovered)
  }
  return ended ?? await loop(exec, state, run, entry.iteration, false)
}

/** An iteration from its model call on; null: the loop goes on (a round ran, a retry or a steering message waits). */
async function modelCall (
  exec: ResolvedAgentExecution, state: TurnState, run: LoopRun, lastIteration: boolean
): Promise<TurnOutcome | null> {
  const answer = await askModel(exec, state, run.cursor, lastIteration)
  if (answer.kind === 'end') return answer.outcome
  if (answer.kind !== 'round') return null
  return await playRound(exec, state, run, answer.round)
}

/** A round prepared (from `reopen`'s gate when resumed there), its checkpoint stored, then run. */
async function playRound (
  exec: ResolvedAgentExecution, state: TurnState, run: LoopRun, round: RoundCursor, reopen?: ReopenedGate
): Promise<TurnOutcome | null> {
  const { cursor, checkpoints } = run
  cursor.round = round
  cursor.step = 'prepare'
  await prepareRound(exec, state, round, reopen)
  cursor.step = 'dispatch'
  if (checkpoints !== undefined) {
    if (!checkpoints.reached('dispatch')) return PARKED
    // Before anything runs, the round's checkpoint is stored (one commit per round): a restart
    // then knows every call of the round may have started, and runs none of them again.
    if (round.slots.some((s) => s.prefill === null)) await checkpoints.stored()
  }
  return await runPrepared(exec, state, run, round)
}

/**
 * A prepared round run and its results collected into the history; `recovered`: what became of
 * its calls before a restart. Null: the loop goes on.
 */
async function runPrepared (
  exec: ResolvedAgentExecution, state: TurnState, run: LoopRun, round: RoundCursor, recovered?: ReadonlyMap<string, RecoveredCall>
): Promise<TurnOutcome | null> {
  const { cursor } = run
  cursor.round = round
  cursor.step = 'dispatch'
  await dispatchRound(exec, state, round.slots, round.parallel, recovered)
  cursor.step = 'collect'
  const verdict = state.signal.aborted ? { kind: 'continue' as const } : collectRound(exec, state, round.slots, round.originalArgs)
  appendRound(state.history, {
    text: round.text, native: round.native, calls: round.calls, slots: round.slots,
    ...(round.providerState === undefined ? {} : { providerState: round.providerState })
  })
  if (state.signal.aborted) return cancelled(state)
  if (verdict.kind === 'abort') return { status: 'failed', code: verdict.code, message: verdict.message }
  return null
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
