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
  /** The permission rule that asked (`default` when no rule allowed it); absent without rules. */
  rule?: string
  /** The parts of the call that need the answer, each with why (a shell command's simple commands or hazards). */
  needs?: string[]
  timeoutMs: number
  /** Nobody who could answer is connected: wait anyway (REST, a later subscriber) or deny at once. */
  whenUnwatched: 'wait' | 'deny'
  /** `budget`: a model call would pass a budget (src/turn/budget-gate.ts); absent: a tool call. */
  approvalKind?: 'budget'
  /** A request that waited when the gateway stopped: it waits again under its own id and expiry, unannounced. */
  reopen?: PendingApproval
  /** Not a question: a client tool's call waits for the client's result (an `edit` answer carries it). */
  clientTool?: boolean
}

/** `operator`: a person answered. Anything else is the runtime failing closed. */
export type ApprovalSource = 'operator' | 'unavailable' | 'timed_out' | 'cancelled'

export interface ApprovalReply {
  decision: 'yes' | 'no' | 'always' | 'edit'
  replacement?: string
  /** Why the person said no, in their words (only with `no`); the model reads it. */
  reason?: string
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

/** What the model reads of a person's denial: their reason too, when they gave one. */
export function userDeniedText (reason: string | undefined): string {
  const words = reason?.trim() ?? ''
  return words === '' ? USER_DENIED_TEXT : `${USER_DENIED_TEXT} Their reason: ${words}`
}

export function runtimeDeniedText (tool: string): string {
  return `Tool call not executed: '${tool}' requires approval and no operator decision was available, so the runtime denied it by policy. This was not a user's decision.`
}
