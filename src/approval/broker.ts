/**
 * Approval broker: holds pending approval requests of the turns running in this process, routes
 * operator answers to them (first valid answer wins), and fails closed on timeout, cancellation
 * or a missing backchannel. It never decides anything itself.
 */
import { randomUUID } from 'node:crypto'
import type { TurnEvent } from '../../schemas/events.js'
import { TollgateError } from '../core/errors.js'
import type { ApprovalChannel, ApprovalQuestion, ApprovalReply } from './decision.js'

export interface OperatorAnswer {
  decision: 'yes' | 'no' | 'always' | 'edit'
  replacement?: string
  decidedBy: string
  channel: string
  principal: string
}

interface Pending {
  requestId: string
  turnId: string
  owner: string
  settle: (reply: ApprovalReply) => void
}

export interface TurnApprovalRoute {
  turnId: string
  /** Principal key of the turn's owner; only it may answer. */
  owner: string
  /** Whether some operator can see the request right now (owner socket, subscriber, SSE stream; on any instance). */
  hasBackchannel: () => boolean | Promise<boolean>
  emit: (event: TurnEvent) => void
}

const RESOLVED_MEMORY = 1024

export class ApprovalBroker {
  private readonly pending = new Map<string, Pending>()
  /** Recently settled ids, so a late second answer hears "already resolved", not "unknown". */
  private readonly resolved = new Map<string, string>()

  channelFor (route: TurnApprovalRoute): ApprovalChannel {
    return { ask: async (question, signal) => await this.ask(route, question, signal) }
  }

  private remember (requestId: string, owner: string): void {
    this.resolved.set(requestId, owner)
    if (this.resolved.size > RESOLVED_MEMORY) {
      const oldest = this.resolved.keys().next().value
      if (oldest !== undefined) this.resolved.delete(oldest)
    }
  }

  private async ask (route: TurnApprovalRoute, question: ApprovalQuestion, signal: AbortSignal): Promise<ApprovalReply> {
    if (!await route.hasBackchannel()) {
      return { decision: 'no', source: 'unavailable', requestId: null, decidedBy: 'runtime', channel: 'runtime' }
    }
    if (signal.aborted) return { decision: 'no', source: 'cancelled', requestId: null, decidedBy: 'runtime', channel: 'runtime' }
    const requestId = `apr_${randomUUID()}`
    const expiresAt = new Date(Date.now() + question.timeoutMs).toISOString()
    return await new Promise<ApprovalReply>((resolve) => {
      // eslint-disable-next-line prefer-const -- assigned after the closures that clear it are built
      let timer: NodeJS.Timeout | undefined
      const onAbort = (): void => { settle({ decision: 'no', source: 'cancelled', requestId, decidedBy: 'runtime', channel: 'runtime' }) }
      const settle = (reply: ApprovalReply): void => {
        if (!this.pending.has(requestId)) return
        this.pending.delete(requestId)
        this.remember(requestId, route.owner)
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        resolve(reply)
      }
      this.pending.set(requestId, { requestId, turnId: route.turnId, owner: route.owner, settle })
      timer = setTimeout(() => { settle({ decision: 'no', source: 'timed_out', requestId, decidedBy: 'runtime', channel: 'runtime' }) }, question.timeoutMs)
      signal.addEventListener('abort', onAbort, { once: true })
      route.emit({
        kind: 'approval.requested',
        request_id: requestId,
        call_id: question.callId,
        name: question.tool,
        arguments: question.arguments,
        summary: question.summary,
        display: question.display,
        expires_at: expiresAt
      })
    })
  }

  /** Which turn a pending request belongs to, if it is pending here and owned by `principal`. */
  turnOf (requestId: string, principal: string): string | null {
    const p = this.pending.get(requestId)
    return p !== undefined && p.owner === principal ? p.turnId : null
  }

  isLocal (requestId: string): boolean {
    return this.pending.has(requestId) || this.resolved.has(requestId)
  }

  /** Applies an operator answer; throws a typed error for unknown, foreign or settled requests. */
  answer (requestId: string, answer: OperatorAnswer): { turnId: string } {
    const p = this.pending.get(requestId)
    if (p === undefined || p.owner !== answer.principal) {
      if (this.resolved.get(requestId) === answer.principal) {
        throw new TollgateError('APPROVAL_ALREADY_RESOLVED')
      }
      // A request of another principal is indistinguishable from a missing one.
      throw new TollgateError('APPROVAL_NOT_FOUND')
    }
    if (answer.decision === 'edit' && (answer.replacement === undefined)) {
      throw new TollgateError('INVALID_DECISION')
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
    p.settle(reply)
    return { turnId: p.turnId }
  }

  pendingCount (): number {
    return this.pending.size
  }
}
