/**
 * The wait of a client tool's call: after the gate let the call through, the turn asks its client
 * for the result the way it asks a person for a decision — through the approval broker, so the
 * wait is listed as pending, answerable from any connection of the owner, bounded by the approval
 * timeout, ended by cancellation and reopened after a restart (decision 0243).
 */
import type { Tool } from '../tools/contract.js'
import type { ResolvedAgentExecution, TurnState } from './context.js'
import type { PendingApproval } from '../../schemas/approval.js'
import { classifyRisk } from '../approval/risk.js'
import { displayArguments } from '../approval/display.js'
import { sanitizeReplacement, summarizeArgs } from '../approval/summary.js'
import { scrubValue } from '../core/security/redact.js'

/** Result text of a client tool call whose result did not come in time (worded like the gate's other not-run texts). */
export function clientTimeoutText (tool: string): string {
  return `[not executed: the client did not send the result of '${tool}' in time]`
}

/** What the gate does with the call (a subset of approve.ts `GateOutcome`, which this module must not import back). */
export type ClientOutcome = { kind: 'replace' | 'deny' | 'cancel', text: string }

export const CLIENT_CANCELLED_TEXT = '[not executed: the turn was cancelled while this call waited for the client\'s result]'

export async function awaitClientResult (
  exec: ResolvedAgentExecution, state: TurnState,
  call: { callId: string, name: string, arguments: Record<string, unknown> }, tool: Tool, reopen?: { request: PendingApproval }
): Promise<ClientOutcome> {
  const scrubbed = scrubValue(call.arguments) as Record<string, unknown>
  // A result given before a restart is in the log as a decision only, its text is not: wait again.
  const reply = await state.approvals.ask({
    callId: call.callId,
    tool: call.name,
    arguments: scrubbed,
    summary: summarizeArgs(scrubbed),
    display: displayArguments(call.arguments),
    risk: classifyRisk(tool, call.arguments),
    reason: `'${call.name}' runs in the client: the turn waits for its result.`,
    timeoutMs: exec.knobs.approvalTimeoutMs,
    // The client that declared the tool answers, whenever it connects or posts.
    whenUnwatched: 'wait',
    clientTool: true,
    ...(reopen === undefined ? {} : { reopen: reopen.request })
  }, state.signal)
  const delivered = reply.source === 'operator' && reply.decision === 'edit'
  if (reply.requestId !== null) {
    const decision = delivered ? 'edit' : reply.source === 'timed_out' ? 'expired' : reply.source === 'cancelled' ? 'cancelled' : 'auto-deny'
    state.emit({ kind: 'approval.resolved', request_id: reply.requestId, call_id: call.callId, decision, decided_by: reply.decidedBy })
    // Audited like an approval's answer (who supplied the result, through which channel); storing
    // it is also what tells the client its result was taken.
    state.recordApproval({
      request_id: reply.requestId,
      call_id: call.callId,
      tool: call.name,
      arguments_summary: summarizeArgs(scrubbed),
      decision,
      decided_by: reply.decidedBy,
      channel: reply.channel,
      principal: reply.principal ?? 'runtime',
      timestamp: new Date().toISOString()
    })
  }
  if (delivered) return { kind: 'replace', text: sanitizeReplacement(reply.replacement ?? '') }
  if (reply.source === 'cancelled') return { kind: 'cancel', text: CLIENT_CANCELLED_TEXT }
  return { kind: 'deny', text: clientTimeoutText(call.name) }
}
