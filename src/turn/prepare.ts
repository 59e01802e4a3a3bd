/**
 * Preparation of one round's calls, in model order, before anything executes:
 *   malformed arguments → before_tool_call hooks → resolution and schema check →
 *   clear the `approved` marker → read-only check → repeated prompt-required shell guard →
 *   approval gate → restore the runtime `approved` marker → duplicate-call guard.
 * Calls that will not run get their slot filled here; the rest are left runnable in the round
 * (`RoundCursor`, which also lets a turn resumed after a restart continue at a waiting call).
 */
import { gateToolApproval, type GateOutcome, type ReopenedGate } from './approve.js'
import { readOnlyRefusal } from '../approval/read-only.js'
import { TurnFailure } from '../core/errors.js'
import { canonicalJson } from '../core/json/canonical.js'
import { TOOL_SEARCH } from '../tools/scope/activated.js'
import type { Tool } from '../tools/contract.js'
import type { ResolvedAgentExecution, TurnState } from './context.js'
import { sortedBeforeHooks } from './hooks.js'
import type { RoundCursor, WaitingGate } from './cursor.js'
import type { ParsedCall } from './parse.js'
import { newSlot, unexecuted, type ToolSlot, type UnavailableTool } from './results.js'
import { withMarker, withoutMarker } from './approval-marker.js'

export function callSignature (name: string, args: unknown): string {
  let encoded: string
  try {
    encoded = canonicalJson(args)
  } catch {
    encoded = '{}'
  }
  return `${name.trim().toLowerCase()}\u0000${encoded}`
}

/** Static registry first, then tools activated earlier in this turn. */
export function resolveTool (exec: ResolvedAgentExecution, name: string): Tool | undefined {
  return exec.registry.get(name) ?? exec.activated?.resolve(name)
}

/**
 * A call after a tool_search in the same round may name a deferred stub that search is about to
 * activate: such a batch runs sequentially, and the dispatcher re-resolves at the door, so the
 * call runs only if the search really activated it.
 */
function resolveForRound (exec: ResolvedAgentExecution, name: string, searchPending: boolean): Tool | undefined {
  return resolveTool(exec, name) ?? (searchPending ? exec.deferred?.lookup(name) : undefined)
}

export function unavailableTool (exec: ResolvedAgentExecution, name: string, searchPending = false): UnavailableTool | null {
  const hidden: UnavailableTool = { errorType: 'tool_not_available', text: `Tool not available in this turn: ${name}` }
  if (exec.registry.isExcluded(name)) return hidden
  const tool = resolveForRound(exec, name, searchPending)
  if (tool === undefined) return { errorType: 'unknown_tool', text: `Unknown tool: ${name}` }
  // The resolved tool's real name is checked too, so a suffix alias cannot route around a denylist.
  if (exec.registry.isExcluded(tool.name)) return hidden
  return null
}

async function runBeforeHooks (
  exec: ResolvedAgentExecution, state: TurnState, name: string, args: Record<string, unknown>
): Promise<{ name: string, args: Record<string, unknown> } | { cancel: string }> {
  let current = { name, args }
  for (const hook of sortedBeforeHooks(exec.hooks)) {
    try {
      const decision = await hook.run({
        name: current.name, arguments: current.args, turnId: state.turnId, sessionId: state.sessionId,
        agent: exec.agent
      })
      if (decision.action === 'cancel') return { cancel: decision.reason }
      current = { name: decision.name ?? current.name, args: decision.arguments ?? current.args }
    } catch (err) {
      // A broken hook must not decide the call: it is skipped and the previous values stand.
      state.log.warn({ hook: hook.name, err }, 'before_tool_call hook failed; skipped')
    }
  }
  return current
}

/** Everything of one call up to its approval gate; a call decided before the gate gets its slot filled. */
async function prepareCall (
  exec: ResolvedAgentExecution, state: TurnState, round: RoundCursor, index: number, dedupText: string
): Promise<{ slot: ToolSlot, tool: Tool, gateCall: WaitingGate['call'] } | null> {
  const call = round.calls[index] as ParsedCall
  round.originalArgs.push(call.arguments)
  const slot = newSlot(index, call.name, call.arguments, call.providerCallId)
  round.slots.push(slot)

  if (call.argumentsError !== undefined) {
    const text = `Error: invalid arguments for '${call.name}': ${call.argumentsError}`
    slot.prefill = unexecuted('error', text)
    return null
  }

  const hooked = await runBeforeHooks(exec, state, call.name, call.arguments)
  if ('cancel' in hooked) {
    // The slot keeps the model's original name: the hook's rewrite never happened.
    slot.prefill = unexecuted('cancelled', `Cancelled by hook: ${hooked.cancel}`, { error: hooked.cancel })
    return null
  }
  slot.name = hooked.name
  slot.arguments = hooked.args

  const unavailable = unavailableTool(exec, slot.name, round.searchPending)
  if (unavailable !== null) {
    slot.unavailable = unavailable
    slot.prefill = unexecuted('error', unavailable.text)
    return null
  }
  const tool = resolveForRound(exec, slot.name, round.searchPending) as Tool

  slot.arguments = withMarker(tool.name, slot.arguments, false)
  const invalid = tool.validateArgs(slot.arguments)
  if (invalid !== null) {
    slot.prefill = unexecuted('error', `Error: invalid arguments for '${slot.name}': ${invalid}`)
    return null
  }

  const refusal = readOnlyRefusal(exec.approval, tool, slot.arguments)
  if (refusal !== null) {
    state.log.info({ audit: 'read_only_refused', tool: tool.name, call_id: slot.callId },
      'refused a side-effecting call under a read-only risk profile')
    slot.prefill = unexecuted('denied', refusal)
    return null
  }

  const needsApproval = exec.approval.needsApproval(tool.name, slot.arguments)
  if (needsApproval && tool.name === 'shell') {
    const signature = callSignature(tool.name, slot.arguments)
    if (round.shellSignatures.has(signature)) {
      slot.prefill = unexecuted('deduplicated', `Skipped duplicate tool call '${slot.name}' ${dedupText}`)
      return null
    }
    if (state.promptShellSignatures.has(signature)) {
      throw new TurnFailure('REPEATED_PROMPT_REQUIRED_CALL', "Agent loop aborted: repeated prompt-required tool call 'shell' with identical arguments before approval.")
    }
    round.shellSignatures.add(signature)
  }
  return { slot, tool, gateCall: { callId: slot.callId, name: slot.name, arguments: withoutMarker(tool.name, slot.arguments) } }
}

/** The gate's outcome applied to the call's slot, then the duplicate-call guard. */
function afterGate (
  exec: ResolvedAgentExecution, state: TurnState, round: RoundCursor, slot: ToolSlot, tool: Tool, gate: GateOutcome, dedupText: string
): void {
  if (gate.kind === 'cancel') {
    slot.prefill = unexecuted('cancelled', gate.text, { error: null })
    return
  }
  if (gate.kind === 'deny') {
    slot.prefill = unexecuted('denied', gate.text)
    return
  }
  if (gate.kind === 'replace') {
    slot.prefill = unexecuted('replaced', gate.text, { success: true, error: null })
    return
  }
  slot.arguments = withMarker(tool.name, slot.arguments, gate.approved)

  if (exec.knobs.dedupEnabled && !exec.knobs.dedupExempt.has(tool.name)) {
    const signature = callSignature(slot.name, slot.arguments)
    if (state.dedupSignatures.has(signature)) {
      slot.prefill = unexecuted('deduplicated', `Skipped duplicate tool call '${slot.name}' ${dedupText}`)
      return
    }
    state.dedupSignatures.add(signature)
  }
  slot.tool = tool
  if (tool.name === TOOL_SEARCH) round.searchPending = true
}

/**
 * Prepares the round's calls from `round.next` on; `reopen` resumes the gate of the call that was
 * waiting for approval when the gateway stopped (its slot is already in the round).
 */
export async function prepareRound (
  exec: ResolvedAgentExecution, state: TurnState, round: RoundCursor, reopen?: ReopenedGate
): Promise<void> {
  if (round.next === 0 && exec.knobs.dedupScope === 'round') state.dedupSignatures.clear()
  const dedupText = `with identical arguments in this ${exec.knobs.dedupScope === 'round' ? 'response' : 'turn'}.`
  if (reopen !== undefined && round.waiting !== null) {
    const slot = round.slots[round.next] as ToolSlot
    const tool = resolveForRound(exec, round.waiting.tool, round.searchPending)
    if (tool === undefined) {
      // The tool is gone since the restart (configuration changed): the call cannot run.
      slot.prefill = unexecuted('error', `Tool not available in this turn: ${round.waiting.tool}`)
    } else {
      const gate = await gateToolApproval(exec, state, round.waiting.call, tool, reopen)
      afterGate(exec, state, round, slot, tool, gate, dedupText)
    }
    round.waiting = null
    round.next += 1
  }
  for (; round.next < round.calls.length; round.next++) {
    const open = await prepareCall(exec, state, round, round.next, dedupText)
    if (open === null) continue
    round.waiting = { call: open.gateCall, tool: open.tool.name }
    const gate = await gateToolApproval(exec, state, open.gateCall, open.tool)
    round.waiting = null
    afterGate(exec, state, round, open.slot, open.tool, gate, dedupText)
  }
  for (const signature of round.shellSignatures) state.promptShellSignatures.add(signature)
}
