/**
 * POST /v1/turns over plain HTTP: 202 and a detached start by default, `?wait=true` holds the
 * request until the turn ends, `Accept: text/event-stream` streams its events (sse.ts). In the
 * last two the request owns the turn: a client that goes away cancels it.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { TurnRequest } from '../../schemas/turn.js'
import type { Gateway } from '../app/gateway.js'
import { principalOf } from '../auth/http.js'
import { hasScope, principalKey } from '../auth/principal.js'
import { TollgateError } from '../core/errors.js'
import type { TurnRecord } from '../store/store.js'
import { wantsEventStream } from './http-events.js'
import { streamNewTurn, streamTurnEvents, type SseFrames } from './sse.js'

/** A client that goes away before the response finished: `request.signal` is unreliable here. */
function onClientGone (reply: FastifyReply, fn: () => void): void {
  reply.raw.on('close', () => { if (!reply.raw.writableFinished) fn() })
}

export function publicTurn (turn: TurnRecord): Omit<TurnRecord, 'owner' | 'receipt_key_id'> {
  const { owner: _owner, receipt_key_id: _keyId, ...rest } = turn
  return rest
}

export async function startTurnOverHttp (
  gateway: Gateway, request: FastifyRequest, reply: FastifyReply, frames: SseFrames
): Promise<unknown> {
  const { turns, connections } = gateway
  const principal = principalOf(request)
  const body = request.body as TurnRequest
  const { wait } = request.query as { wait?: boolean }
  const sse = wantsEventStream(request)
  if ((sse || wait === true) && body.owner_connection !== undefined) {
    throw new TollgateError('INVALID_REQUEST', 'owner_connection cannot be combined with an SSE stream or ?wait=true: the request itself owns the turn')
  }

  if (!sse && wait !== true) {
    // A repeated idempotency_key answers with the same turn, whatever its status now.
    const { turn } = await turns.start(principal, body, { ownerConnection: body.owner_connection ?? null, channel: 'http' })
    return await reply.code(202).send({ turn_id: turn.turn_id, session_id: turn.session_id, status: turn.status, events_url: `/v1/turns/${turn.turn_id}/events` })
  }

  const connection = connections.open(sse ? 'sse' : 'http', principalKey(principal), hasScope(principal, 'approvals:answer'))
  onClientGone(reply, () => { connections.close(connection.id) })
  const onClose = (): void => { connections.close(connection.id) }
  // The stream follows the turn from before its first event: turn.started goes out at once.
  const stream = sse ? streamNewTurn(gateway, reply, onClose, frames) : null
  if (stream !== null) connection.follow = stream.follow
  let started
  try {
    started = await turns.start(principal, body, { ownerConnection: connection.id, channel: sse ? 'sse' : 'http' })
  } catch (err) {
    stream?.stop()
    connections.close(connection.id)
    throw err
  }
  const { turn } = started
  connection.turns.add(turn.turn_id)

  if (!sse) {
    const done = await turns.waitFor(principal, turn.turn_id)
    connections.close(connection.id)
    return await reply.code(200).send(publicTurn(done))
  }
  // A repeated idempotency key started nothing: the stream replays the existing turn.
  if (stream?.following() !== true) {
    await streamTurnEvents(gateway, reply, { turnId: turn.turn_id, afterSeq: 0, knownLastSeq: 0, onClose, frames })
  }
}
