/**
 * Loop control: the model sees tool results and continues until it returns final text, the turn
 * is cancelled, a guard aborts it, or the iteration cap is reached.
 */
import { TurnFailure, type TurnFailureCode } from '../core/errors.js'
import type { ObserverCorrelation } from '../observe/observer.js'
import { ProviderError, type ChatResponse } from '../providers/types.js'
import { scrubText } from '../core/security/redact.js'
import type { ResolvedAgentExecution, TurnState } from './context.js'
import { dispatchRound, parallelEligible } from './dispatch.js'
import { appendRound } from './history.js'
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

/** Streams visible text as it arrives, minus reasoning blocks. */
function liveText (state: TurnState): (text: string) => void {
  const filter = createThinkFilter()
  return (text) => {
    const visible = filter.push(text)
    if (visible !== '') state.emit({ kind: 'text.delta', text: visible })
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
  exec: ResolvedAgentExecution, state: TurnState, request: ReturnType<typeof buildIterationRequest>, live: boolean
): Promise<ChatResponse> {
  const { provider, model } = exec.model
  const correlation = correlationOf(exec, state)
  exec.observer.record({
    kind: 'llm_request', provider: provider.name, provider_kind: provider.kind, model, messages: request.messages.length,
    tools: request.useNative ? request.specs.length : 0,
    ...(provider.endpoint === undefined ? {} : { server_address: provider.endpoint.address, server_port: provider.endpoint.port }),
    ...correlation
  })
  const started = performance.now()
  try {
    const response = await provider.chat({
      model,
      messages: request.messages,
      ...(request.useNative ? { tools: request.specs } : {}),
      ...(exec.model.temperature === undefined ? {} : { temperature: exec.model.temperature })
    }, {
      signal: state.signal,
      ...(live ? { onTextDelta: liveText(state) } : {}),
      onRetry: (retry) => { state.log.warn({ provider: provider.name, model, ...retry }, 'retrying the model call') }
    })
    exec.observer.record({
      kind: 'llm_response', provider: provider.name, model, duration_ms: performance.now() - started, success: true,
      ...(response.usage?.input_tokens === undefined ? {} : { input_tokens: response.usage.input_tokens }),
      ...(response.usage?.output_tokens === undefined ? {} : { output_tokens: response.usage.output_tokens }),
      ...(response.id === undefined ? {} : { response_id: response.id }),
      ...(response.model === undefined ? {} : { response_model: response.model }),
      ...(response.finishReason === undefined ? {} : { finish_reason: response.finishReason }),
      ...correlation
    })
    return response
  } catch (err) {
    if (!state.signal.aborted) {
      exec.observer.record({
        kind: 'llm_response', provider: provider.name, model, duration_ms: performance.now() - started, success: false,
        error: scrubText((err as Error).message), error_type: errorType(err), ...correlation
      })
    }
    throw err
  }
}

function providerFailure (err: unknown): TurnOutcome {
  if (err instanceof ProviderError) return { status: 'failed', code: err.code, message: err.message }
  if (err instanceof TurnFailure) return { status: 'failed', code: err.code, message: err.message }
  return { status: 'failed', code: 'INTERNAL', message: `unexpected error: ${(err as Error).message}` }
}

function isSemanticallyEmpty (parsed: ParsedResponse): boolean {
  return parsed.calls.length === 0 && parsed.text.trim() === ''
}

export async function runToolLoop (exec: ResolvedAgentExecution, state: TurnState): Promise<TurnOutcome> {
  try {
    return await loop(exec, state)
  } catch (err) {
    if (state.signal.aborted) return cancelled(state)
    return providerFailure(err)
  }
}

async function loop (exec: ResolvedAgentExecution, state: TurnState): Promise<TurnOutcome> {
  let malformed = 0
  for (let i = 0; i < exec.knobs.maxIterations; i++) {
    if (state.signal.aborted) return cancelled(state)
    state.iteration = i + 1
    state.emit({ kind: 'iteration', n: state.iteration })
    exec.observer.record({ kind: 'iteration', n: state.iteration, delegate_depth: exec.delegateDepth, ...correlationOf(exec, state) })

    const request = buildIterationRequest(exec, state.history, state.systemNotes)
    // Native providers stream visible text live; text-protocol output would leak call payloads,
    // so it is shown only after parsing.
    const response = await callModel(exec, state, request, request.useNative)
    const parsed = parseResponse(response, {
      advertised: new Set(request.specs.map((s) => s.name)),
      strict: exec.knobs.strictToolParsing
    })

    if (parsed.parseIssue) {
      malformed += 1
      if (malformed <= MAX_MALFORMED_PROTOCOL_RETRIES) {
        state.history.push({ role: 'user', content: PARSE_ERROR_FEEDBACK })
        continue
      }
      state.emit({ kind: 'text.delta', text: MALFORMED_FALLBACK_TEXT })
      state.history.push({ role: 'assistant', content: MALFORMED_FALLBACK_TEXT })
      return { status: 'completed', finalText: MALFORMED_FALLBACK_TEXT }
    }
    if (isSemanticallyEmpty(parsed)) {
      return { status: 'failed', code: 'EMPTY_COMPLETION', message: 'the model returned neither text nor tool calls' }
    }
    if (!request.useNative && parsed.displayText !== '') state.emit({ kind: 'text.delta', text: parsed.displayText })

    if (parsed.calls.length === 0) {
      state.history.push({ role: 'assistant', content: response.text })
      return { status: 'completed', finalText: receiptsBlock(exec, state, parsed.displayText) }
    }

    const parallel = parallelEligible(exec, parsed.calls)
    const prepared = await prepareRound(exec, state, parsed.calls)
    await dispatchRound(exec, state, prepared.slots, parallel)
    const verdict = state.signal.aborted ? { kind: 'continue' as const } : collectRound(exec, state, prepared.slots, prepared.originalArgs)
    appendRound(state.history, { text: response.text, native: parsed.native, calls: parsed.calls, slots: prepared.slots })
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
    response = await callModel(exec, state, buildIterationRequest(exec, state.history, state.systemNotes, false), false)
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
