/**
 * Execution of a prepared round. Sequential by default; parallel only when the runtime knob is on,
 * the round has more than one call, no call needs approval and no call is tool_search (lookup
 * must not race activation). Sequential dispatch checks cancellation before each call; a
 * cancelled parallel batch keeps finished siblings' real results and interrupts only the rest.
 */
import type { ToolContext } from '../tools/contract.js'
import { lazyProperties } from '../core/lazy-properties.js'
import { scrubText, scrubValue } from '../core/security/redact.js'
import type { ObserverCorrelation } from '../observe/observer.js'
import { TOOL_SEARCH } from '../tools/scope/activated.js'
import { turnScope, type ResolvedAgentExecution, type TurnState } from './context.js'
import type { ParsedCall } from './parse.js'
import { createProgressReporter } from './progress.js'
import { unavailableTool } from './prepare.js'
import type { RecoveredCall } from './cursor.js'
import {
  adoptLoggedOutcome, announceSlot, INTERRUPTED_TEXT, NOT_RUN_TEXT, RESTART_INTERRUPTED_TEXT, settleSlot, unexecuted, type RawOutcome,
  type ToolSlot, type UnavailableTool
} from './results.js'

/** Decided on the model's calls before hooks, as the reference runtime does. */
export function parallelEligible (exec: ResolvedAgentExecution, calls: readonly ParsedCall[]): boolean {
  if (!exec.knobs.parallelTools || calls.length <= 1) return false
  if (calls.some((c) => c.name === TOOL_SEARCH)) return false
  return !calls.some((c) => exec.approval.needsApproval(c.name, c.arguments))
}

function errorMessage (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

class Interrupted {}

function correlationOf (exec: ResolvedAgentExecution, state: TurnState): ObserverCorrelation {
  return { turn_id: state.turnId, session_id: state.sessionId, agent: exec.agent, channel: exec.channel }
}

function idsOf (slot: ToolSlot): { call_id: string, provider_call_id?: string } {
  return { call_id: slot.callId, ...(slot.providerCallId === null ? {} : { provider_call_id: slot.providerCallId }) }
}

/** A call naming no runnable tool never ran; it is still observed as a failed call (logs, metrics, spans). */
function observeUnavailable (exec: ResolvedAgentExecution, state: TurnState, slot: ToolSlot, unavailable: UnavailableTool): void {
  const correlation = correlationOf(exec, state)
  const ids = idsOf(slot)
  const args = scrubValue(slot.arguments)
  exec.observer.record({ kind: 'tool_call_start', tool: slot.name, ...ids, arguments: args, ...correlation })
  exec.observer.record({
    kind: 'tool_call', tool: slot.name, ...ids, arguments: args, duration_ms: 0, success: false, status: 'error',
    error_type: unavailable.errorType, result: scrubText(unavailable.text), ...correlation
  })
}

/** Settles a call preparation decided; an unavailable one is observed now, when its turn in model order comes. */
function settlePrefilled (exec: ResolvedAgentExecution, state: TurnState, slot: ToolSlot, prefill: RawOutcome): void {
  if (slot.unavailable !== null) observeUnavailable(exec, state, slot, slot.unavailable)
  settleSlot(exec, state, slot, prefill)
}

/**
 * Made on first use: most calls log nothing (a child logger serialises its bindings at once), and
 * only tools that touch files need the workspace folder (looked up once per turn).
 */
const withCallInputs = lazyProperties<{ exec: ResolvedAgentExecution, state: TurnState, slot: ToolSlot }, Pick<ToolContext, 'log' | 'workspaceDir'>>({
  log: ({ state, slot }) => state.log.child({ tool: slot.name, call_id: slot.callId }),
  workspaceDir: ({ exec }) => exec.workspaceDir()
})

async function executeOne (exec: ResolvedAgentExecution, state: TurnState, slot: ToolSlot): Promise<void> {
  const correlation = correlationOf(exec, state)
  const ids = idsOf(slot)
  // Observers (logs, metrics, tracing) only ever see scrubbed arguments and results.
  const args = scrubValue(slot.arguments)
  const provenance = slot.tool?.attribution.provenance
  exec.observer.record({
    kind: 'tool_call_start', tool: slot.name, ...ids, ...(provenance === undefined ? {} : { provenance }), arguments: args, ...correlation
  })

  // Checked again at the door: preparation resolved the tool, but nothing hidden may run.
  const unavailable = unavailableTool(exec, slot.name)
  if (unavailable !== null) {
    exec.observer.record({
      kind: 'tool_call', tool: slot.name, ...ids, arguments: args, duration_ms: 0, success: false, status: 'error',
      error_type: unavailable.errorType, result: scrubText(unavailable.text), ...correlation
    })
    settleSlot(exec, state, slot, unexecuted('error', unavailable.text))
    return
  }
  const tool = slot.tool
  if (tool === null) throw new Error('dispatch reached a slot preparation did not resolve')

  announceSlot(state, slot)
  // Closed before the result is settled, so no tool.progress ever follows the call's tool_result.
  const progress = createProgressReporter({ callId: slot.callId, limits: exec.knobs.toolProgress, emit: state.emit })
  const started = performance.now()
  const controller = new AbortController()
  const onAbort = (): void => controller.abort(state.signal.reason)
  state.signal.addEventListener('abort', onAbort, { once: true })
  // The announcement above reaches subscribers synchronously; one of them may have cancelled the
  // turn already, and an abort listener added after the fact never fires.
  if (state.signal.aborted) onAbort()
  let raw: RawOutcome | Interrupted
  let threw = false
  try {
    const interrupted = new Promise<Interrupted>((resolve) => {
      if (controller.signal.aborted) resolve(new Interrupted())
      controller.signal.addEventListener('abort', () => resolve(new Interrupted()), { once: true })
    })
    const context = withCallInputs({
      signal: controller.signal,
      turnId: state.turnId,
      sessionId: state.sessionId,
      callId: slot.callId,
      ...(exec.tenant === undefined ? {} : { tenant: exec.tenant }),
      workspaceOwner: exec.workspaceOwner,
      network: exec.shellNetwork,
      progress: progress.report,
      ...(tool.turnScoped === true ? { turn: turnScope(exec, state) } : {})
    }, { exec, state, slot })
    // Preparation validated these arguments against the tool's schema.
    const run = tool.executeValidated(slot.arguments, context).then((result): RawOutcome => {
      const durationMs = performance.now() - started
      if (result.success) return { status: 'ok', success: true, output: result.output, error: null, durationMs, executed: true }
      const reason = result.error != null && result.error !== '' ? result.error : result.output
      return { status: 'error', success: false, output: `Error: ${reason}`, error: reason, durationMs, executed: true }
    }, (err: unknown): RawOutcome => {
      threw = true
      const text = `Error executing ${slot.name}: ${errorMessage(err)}`
      return { status: 'error', success: false, output: text, error: text, durationMs: performance.now() - started, executed: true }
    })
    raw = await Promise.race([run, interrupted])
  } finally {
    state.signal.removeEventListener('abort', onAbort)
    progress.close()
  }

  if (raw instanceof Interrupted) {
    const durationMs = performance.now() - started
    settleSlot(exec, state, slot, { status: 'interrupted', success: false, output: INTERRUPTED_TEXT, error: null, durationMs, executed: false })
    // Unlike the reference, a started call always gets its terminal record: spans end, metrics count it.
    exec.observer.record({
      kind: 'tool_call', tool: slot.name, ...ids, arguments: args, duration_ms: durationMs, success: false, status: 'interrupted',
      error_type: 'interrupted', result: INTERRUPTED_TEXT, ...correlation
    })
    return
  }
  const outcome = settleSlot(exec, state, slot, raw)
  exec.observer.record({
    kind: 'tool_call', tool: slot.name, ...ids, arguments: args, duration_ms: raw.durationMs, success: raw.success, status: raw.status,
    ...(raw.success ? {} : { error_type: threw ? 'tool_exception' : 'tool_error' }), result: scrubText(outcome.output), ...correlation
  })
  await runAfterHooks(exec, state, slot, outcome.output, raw)
}

async function runAfterHooks (
  exec: ResolvedAgentExecution, state: TurnState, slot: ToolSlot, output: string, raw: RawOutcome
): Promise<void> {
  if (exec.hooks.after.length === 0) return
  const info = {
    name: slot.name, arguments: slot.arguments, turnId: state.turnId, sessionId: state.sessionId, agent: exec.agent,
    callId: slot.callId, success: raw.success, output, error: raw.error, durationMs: raw.durationMs
  }
  await Promise.all(exec.hooks.after.map(async (hook) => {
    try {
      await hook.run(info)
    } catch (err) {
      state.log.warn({ hook: hook.name, err }, 'after_tool_call hook failed')
    }
  }))
}

/**
 * A call of a round resumed after a restart: settled before it (its result is in the log and is
 * taken as it is, never re-announced), or started and never finished — it is not run again; it
 * gets an `interrupted` result that tells the model so.
 */
function settleRecovered (exec: ResolvedAgentExecution, state: TurnState, slot: ToolSlot, recovered: RecoveredCall): void {
  if (recovered.kind === 'settled') {
    slot.announced = true
    adoptLoggedOutcome(state, slot, recovered)
    return
  }
  slot.announced = recovered.announced
  settleSlot(exec, state, slot, { status: 'interrupted', success: false, output: RESTART_INTERRUPTED_TEXT, error: null, durationMs: 0, executed: false })
  exec.observer.record({
    kind: 'tool_call', tool: slot.name, ...idsOf(slot), arguments: scrubValue(slot.arguments), duration_ms: 0, success: false,
    status: 'interrupted', error_type: 'interrupted', result: RESTART_INTERRUPTED_TEXT, ...correlationOf(exec, state)
  })
}

/**
 * Runs a prepared round; every slot is settled, in model order where order is observable.
 * `recovered` (a round resumed after a restart) says which calls ran before it.
 */
export async function dispatchRound (
  exec: ResolvedAgentExecution, state: TurnState, slots: readonly ToolSlot[], parallel: boolean,
  recovered: ReadonlyMap<string, RecoveredCall> = new Map()
): Promise<void> {
  for (const slot of slots) {
    const known = recovered.get(slot.callId)
    if (known !== undefined) settleRecovered(exec, state, slot, known)
  }
  const open = slots.filter((s) => s.outcome === null)
  const runnable = open.filter((s) => s.prefill === null)
  if (parallel && runnable.length > 1) {
    for (const slot of open) if (slot.prefill !== null) settlePrefilled(exec, state, slot, slot.prefill)
    await Promise.all(runnable.map(async (slot) => await executeOne(exec, state, slot)))
    return
  }
  for (const slot of open) {
    if (slot.prefill !== null) settlePrefilled(exec, state, slot, slot.prefill)
    else if (state.holding?.() === true) await heldAtTheDoor(state)
    if (slot.prefill !== null) continue
    if (state.signal.aborted) settleSlot(exec, state, slot, unexecuted('cancelled', NOT_RUN_TEXT, { error: null }))
    else await executeOne(exec, state, slot)
  }
}

/**
 * The gateway is stopping: a sequential round's next tool does not start; the turn waits to be
 * parked (its signal aborts), and the call runs when the turn resumes.
 */
async function heldAtTheDoor (state: TurnState): Promise<void> {
  if (state.signal.aborted) return
  await new Promise<void>((resolve) => { state.signal.addEventListener('abort', () => { resolve() }, { once: true }) })
}
