/**
 * Turns on other instances, over the control plane. Asking: cancel a turn running elsewhere,
 * deliver an approval answer to the instance that holds the request, ask whether an operator
 * watches a turn from a socket elsewhere. Serving: the same questions from the other instances,
 * each answered with a reply body when it concerns something on this instance, null when not.
 */
import type { SteerAccepted } from '../../schemas/steering.js'
import type { ApprovalBroker, OperatorAnswer } from '../approval/broker.js'
import type { ControlRequest } from '../bus/bus.js'
import { ControlRpc, remoteError, type ControlRpcOptions, type ReplyBody } from '../cluster/control.js'
import { TollgateError } from '../core/errors.js'
import { tenantOf } from '../core/tenancy.js'
import type { TurnRecord } from '../store/store.js'
import { CancelReason } from '../turn/loop.js'
import type { ConnectionRegistry } from './connections.js'
import type { RunningTurn } from './running-turn.js'

export interface RemoteScope {
  active: ReadonlyMap<string, RunningTurn>
  broker: ApprovalBroker
  connections: ConnectionRegistry
}

export async function applyControl (scope: RemoteScope, request: ControlRequest): Promise<ReplyBody | null> {
  switch (request.type) {
    case 'cancel': {
      const active = scope.active.get(request.turn_id)
      if (active === undefined) return null
      if (active.record.owner !== request.principal) return { error: 'TURN_NOT_FOUND' }
      active.controller.abort(new CancelReason(request.reason))
      const done = await active.done
      return { turn_id: done.turn_id, status: done.status }
    }
    case 'approval': {
      if (!scope.broker.isLocal(request.request_id)) return null
      try {
        const { turnId } = await scope.broker.answer(request.request_id, {
          decision: request.decision, decidedBy: request.decided_by, channel: request.channel, principal: request.principal,
          ...(request.replacement === undefined ? {} : { replacement: request.replacement }),
          ...(request.reason === undefined ? {} : { reason: request.reason })
        })
        return { turn_id: turnId }
      } catch (err) {
        if (err instanceof TollgateError) return { error: err.code }
        throw err
      }
    }
    case 'watching':
      return scope.connections.watchedBy(request.principal, request.turn_id, request.session_id) ? {} : null
    case 'steer': {
      const active = scope.active.get(request.turn_id)
      if (active === undefined) return null
      // A holder of `turns:steer` (checked by the instance it asked) may steer any turn of its tenant.
      const mayOthers = request.steerer === true && tenantOf(active.record.owner) === tenantOf(request.principal)
      if (active.record.owner !== request.principal && !mayOthers) return { error: 'TURN_NOT_FOUND' }
      try {
        const { turn_id: turnId, ...steered } = await active.steer(request.message, request.principal)
        return { turn_id: turnId, steered }
      } catch (err) {
        if (err instanceof TollgateError) return { error: err.code }
        throw err
      }
    }
  }
}

export class RemoteTurns {
  private readonly rpc: ControlRpc

  constructor (deps: ControlRpcOptions, scope: RemoteScope) {
    this.rpc = new ControlRpc(deps)
    this.rpc.serve(async (request) => await applyControl(scope, request))
  }

  /** Whether an operator of the turn's principal watches it from a socket on another instance. */
  async watching (record: TurnRecord): Promise<boolean> {
    const reply = await this.rpc.request({ type: 'watching', turn_id: record.turn_id, session_id: record.session_id, principal: record.owner })
    return reply !== null && reply.error === undefined
  }

  /** Its instance cancels the turn and answers once the turn has ended. */
  async cancel (turnId: string, principal: string, reason: string): Promise<void> {
    await this.rpc.request({ type: 'cancel', turn_id: turnId, principal, reason })
  }

  /** Its instance queues the message for the turn; TURN_NOT_RUNNING when no instance runs it now. */
  async steer (turnId: string, principal: string, message: string, steerer: boolean): Promise<SteerAccepted> {
    const reply = await this.rpc.request({ type: 'steer', turn_id: turnId, principal, message, ...(steerer ? { steerer: true as const } : {}) })
    if (reply === null) throw new TollgateError('TURN_NOT_RUNNING', 'no gateway instance runs this turn right now')
    if (reply.error !== undefined || reply.steered === undefined) throw remoteError(reply.error ?? 'INTERNAL')
    return { turn_id: turnId, ...reply.steered }
  }

  async answer (requestId: string, principal: string, answer: Omit<OperatorAnswer, 'principal'>): Promise<{ turnId: string }> {
    const reply = await this.rpc.request({
      type: 'approval', request_id: requestId, principal, decision: answer.decision, decided_by: answer.decidedBy, channel: answer.channel,
      ...(answer.replacement === undefined ? {} : { replacement: answer.replacement }),
      ...(answer.reason === undefined ? {} : { reason: answer.reason })
    })
    if (reply === null) throw new TollgateError('APPROVAL_NOT_FOUND')
    if (reply.error !== undefined || reply.turn_id === undefined) throw remoteError(reply.error ?? 'INTERNAL')
    return { turnId: reply.turn_id }
  }

  close (): void {
    this.rpc.close()
  }
}
