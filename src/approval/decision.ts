/**
 * The vocabulary of one approval decision, shared by the engine's gate (turn/approve.ts), the
 * broker that routes questions to people (broker.ts) and the transports: the question, the
 * reply, who decided, and the one text the model reads when the runtime denies by policy.
 */
import type { ApprovalRisk, PendingApproval } from '../../schemas/approval.js'
import type { ArgumentDisplay } from './display.js'

export interface ApprovalQuestion {
  callId: string
  tool: string
  /** Scrubbed, for programs. */
  arguments: Record<string, unknown>
  /** Scrubbed one-line record (the audit's `arguments_summary`). */
  summary: string
  /** The exact arguments, for the person deciding. */
  display: ArgumentDisplay[]
  risk: ApprovalRisk
  /** The policy rule that asked, in words. */
  reason: string
  timeoutMs: number
  /** Nobody who could answer is connected: wait anyway (REST, a later subscriber) or deny at once. */
  whenUnwatched: 'wait' | 'deny'
  /** `budget`: a model call would pass a budget (src/turn/budget-gate.ts); absent: a tool call. */
  approvalKind?: 'budget'
  /** A request that waited when the gateway stopped: it waits again under its own id and expiry, unannounced. */
  reopen?: PendingApproval
}

/** `operator`: a person answered. Anything else is the runtime failing closed. */
export type ApprovalSource = 'operator' | 'unavailable' | 'timed_out' | 'cancelled'

export interface ApprovalReply {
  decision: 'yes' | 'no' | 'always' | 'edit'
  replacement?: string
  source: ApprovalSource
  requestId: string | null
  decidedBy: string
  channel: string
  /** Principal key (`tenant/sub`) of the operator who answered; the broker always sets it for operator answers. */
  principal?: string
}

/** The audit's principal for runtime decisions; never a principal key (those always contain a `/`). */
export const RUNTIME_DECIDER = 'runtime'

/** The turn's approval backchannel (WebSocket owner/subscribers, SSE + REST). */
export interface ApprovalChannel {
  ask (question: ApprovalQuestion, signal: AbortSignal): Promise<ApprovalReply>
}

export const NO_BACKCHANNEL: ApprovalChannel = {
  async ask () {
    return { decision: 'no', source: 'unavailable', requestId: null, decidedBy: 'runtime', channel: 'runtime' }
  }
}

export const USER_DENIED_TEXT = 'Denied by user.'

export function runtimeDeniedText (tool: string): string {
  return `Tool call not executed: '${tool}' requires approval and no operator decision was available, so the runtime denied it by policy. This was not a user's decision.`
}
