/**
 * The control plane's serving side: another instance asks this one to cancel a turn, deliver an
 * approval answer, or say whether an operator watches a turn from here. Each answer is a reply
 * body when the request concerns something on this instance, null when it does not.
 */
import type { ApprovalBroker } from '../approval/broker.js'
import type { ControlRequest } from '../bus/bus.js'
import type { ReplyBody } from '../cluster/control.js'
import { TollgateError } from '../core/errors.js'
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
        const { turnId } = scope.broker.answer(request.request_id, {
          decision: request.decision, decidedBy: request.decided_by, channel: request.channel, principal: request.principal,
          ...(request.replacement === undefined ? {} : { replacement: request.replacement })
        })
        return { turn_id: turnId }
      } catch (err) {
        if (err instanceof TollgateError) return { error: err.code }
        throw err
      }
    }
    case 'watching':
      return scope.connections.watchedBy(request.principal, request.turn_id, request.session_id) ? {} : null
  }
}
