/**
 * Approval broker: holds pending approval requests of the turns running in this process, routes
 * operator answers to them (first valid answer wins), and fails closed on timeout or
 * cancellation. An interactive turn's request waits for an answer even when nobody is connected
 * yet (a web app POSTs, a browser subscribes later); only a `deny` policy for unwatched turns
 * denies at once. It never decides anything itself.
 */
import { randomUUID } from 'node:crypto'
import type { PendingApproval } from '../../schemas/approval.js'
import type { TurnEvent } from '../../schemas/events.js'
import { TollgateError } from '../core/errors.js'
import type { ApprovalChannel, ApprovalQuestion, ApprovalReply } from './decision.js'

export interface OperatorAnswer {
  decision: 'yes' | 'no' | 'always' | 'edit'
  replacement?: string
  /** A denial's reason in the person's words, for the model. */
  reason?: string
  decidedBy: string
  channel: string
  principal: string
}

/** How a settled request ended, so a late answer hears why it can no longer apply. */
type SettledAs = 'answered' | 'expired' | 'cancelled'

interface Pending {
  view: PendingApproval
  route: TurnApprovalRoute
  settle: (reply: ApprovalReply, as: SettledAs) => void
}

export interface TurnApprovalRoute {
  turnId: string
  sessionId: string
  /** Principal key of the turn's owner; only it may answer. */
  owner: string
  /** Whether some operator can see the request right now (owner socket, subscriber, SSE stream; on any instance). */
  hasBackchannel: () => boolean | Promise<boolean>
  emit: (event: TurnEvent) => void
  /** The request is waiting (`request`) or no longer (`null`, with its id): the turn lists what waits. */
  onPending: (requestId: string, request: PendingApproval | null) => void
  /**
   * Asked just before an operator's answer settles the request: resolves once the turn has stored
   * the decision (its `approval.resolved` event with its audit entry), rejects when it cannot
   * (the turn is parked for a restart, which asks again).
   */
  decided: (requestId: string) => Promise<void>
}

const SETTLED_MEMORY = 1024

/** The typed refusal of an answer that came too late; texts come from the error catalogue, as on every instance. */
const LATE_ANSWER: Record<SettledAs, 'APPROVAL_ALREADY_RESOLVED' | 'APPROVAL_EXPIRED' | 'APPROVAL_CANCELLED'> = {
  answered: 'APPROVAL_ALREADY_RESOLVED',
  expired: 'APPROVAL_EXPIRED',
  cancelled: 'APPROVAL_CANCELLED'
}

export class ApprovalBroker {
  private readonly pending = new Map<string, Pending>()
  /** Recently settled ids with their owner and outcome, so a late answer hears why, not "unknown". */
  private readonly settled = new Map<string, { owner: string, as: SettledAs }>()

  channelFor (route: TurnApprovalRoute): ApprovalChannel {
    return { ask: async (question, signal) => await this.ask(route, question, signal) }
  }

  private remember (requestId: string, owner: string, as: SettledAs): void {
    this.settled.set(requestId, { owner, as })
    if (this.settled.size > SETTLED_MEMORY) {
      const oldest = this.settled.keys().next().value
      if (oldest !== undefined) this.settled.delete(oldest)
    }
  }

  private async ask (route: TurnApprovalRoute, question: ApprovalQuestion, signal: AbortSignal): Promise<ApprovalReply> {
    const reopened = question.reopen
    if (reopened === undefined && question.whenUnwatched === 'deny' && !await route.hasBackchannel()) {
      return { decision: 'no', source: 'unavailable', requestId: null, decidedBy: 'runtime', channel: 'runtime' }
    }
    if (signal.aborted) return { decision: 'no', source: 'cancelled', requestId: reopened?.request_id ?? null, decidedBy: 'runtime', channel: 'runtime' }
    const now = Date.now()
    // A request reopened after a restart keeps its id and its expiry; it was announced before.
    const view: PendingApproval = reopened ?? {
      request_id: `${question.clientTool === true ? 'ctr' : 'apr'}_${randomUUID()}`,
      turn_id: route.turnId,
      session_id: route.sessionId,
      call_id: question.callId,
      tool: question.tool,
      summary: question.summary,
      display: question.display,
      risk: question.risk,
      reason: question.reason,
      ...permissionFields(question),
      requested_at: new Date(now).toISOString(),
      expires_at: new Date(now + question.timeoutMs).toISOString(),
      ...(question.clientTool === true ? { client_tool: true as const } : {}),
      ...(question.approvalKind === undefined ? {} : { approval_kind: question.approvalKind })
    }
    const requestId = view.request_id
    return await new Promise<ApprovalReply>((resolve) => {
      // eslint-disable-next-line prefer-const -- assigned after the closures that clear it are built
      let timer: NodeJS.Timeout | undefined
      const runtime = (source: ApprovalReply['source']): ApprovalReply =>
        ({ decision: 'no', source, requestId, decidedBy: 'runtime', channel: 'runtime' })
      const onAbort = (): void => { settle(runtime('cancelled'), 'cancelled') }
      const settle = (reply: ApprovalReply, as: SettledAs): void => {
        if (!this.pending.has(requestId)) return
        this.pending.delete(requestId)
        this.remember(requestId, route.owner, as)
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        route.onPending(requestId, null)
        resolve(reply)
      }
      this.pending.set(requestId, { view, route, settle })
      route.onPending(requestId, view)
      timer = setTimeout(() => { settle(runtime('timed_out'), 'expired') }, Math.max(0, Date.parse(view.expires_at) - now))
      signal.addEventListener('abort', onAbort, { once: true })
      if (reopened !== undefined) return
      route.emit({
        kind: 'approval.requested',
        request_id: requestId,
        call_id: question.callId,
        name: question.tool,
        arguments: question.arguments,
        summary: question.summary,
        display: question.display,
        risk: question.risk,
        reason: question.reason,
        ...permissionFields(question),
        requested_at: view.requested_at,
        expires_at: view.expires_at,
        ...(view.client_tool === true ? { client_tool: true as const } : {}),
        ...(question.approvalKind === undefined ? {} : { approval_kind: question.approvalKind })
      })
    })
  }

  isLocal (requestId: string): boolean {
    return this.pending.has(requestId) || this.settled.has(requestId)
  }

  /**
   * Applies an operator answer. Unknown and other principals' requests are APPROVAL_NOT_FOUND
   * alike (no oracle); a settled one answers why it no longer applies. Resolves once the turn has
   * stored the decision: whoever is told it was taken can rely on it surviving a crash.
   */
  async answer (requestId: string, answer: OperatorAnswer): Promise<{ turnId: string }> {
    const p = this.pending.get(requestId)
    if (p === undefined || p.route.owner !== answer.principal) {
      const settled = this.settled.get(requestId)
      if (settled !== undefined && settled.owner === answer.principal) {
        throw new TollgateError(LATE_ANSWER[settled.as])
      }
      throw new TollgateError('APPROVAL_NOT_FOUND')
    }
    if (answer.decision === 'edit' && (answer.replacement === undefined)) {
      throw new TollgateError('INVALID_DECISION')
    }
    // A client tool's call is answered with its result (an edit), never approved or denied.
    if (p.view.client_tool === true && answer.decision !== 'edit') {
      throw new TollgateError('INVALID_DECISION', 'a client tool call is answered with its result (decision "edit" with the output as replacement)')
    }
    const reply: ApprovalReply = {
      decision: answer.decision,
      source: 'operator',
      requestId,
      decidedBy: answer.decidedBy,
      channel: answer.channel,
      principal: answer.principal
    }
    if (answer.replacement !== undefined) reply.replacement = answer.replacement
    if (answer.reason !== undefined && answer.decision === 'no') reply.reason = answer.reason
    // Asked first: the turn takes the decision as soon as the request settles.
    const stored = p.route.decided(requestId)
    p.settle(reply, 'answered')
    await stored
    return { turnId: p.view.turn_id }
  }

  pendingCount (): number {
    return this.pending.size
  }
}

/** The permission rule that asked and the parts of the call that need the answer, when rules asked. */
function permissionFields (question: ApprovalQuestion): { rule?: string, needs?: string[] } {
  return {
    ...(question.rule === undefined ? {} : { rule: question.rule }),
    ...(question.needs === undefined || question.needs.length === 0 ? {} : { needs: question.needs })
  }
}
