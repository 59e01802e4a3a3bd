/**
 * GET /v1/turns/:id/events over plain HTTP: a JSON page of the retained events after a seq, or
 * with `Accept: text/event-stream` a resumable event stream (sse.ts) from `Last-Event-ID` (what an
 * EventSource sends on reconnect) or `after_seq`. The stream watches the turn and may answer its
 * approvals through REST, but never owns it: dropping it cancels nothing.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Gateway } from '../app/gateway.js'
import { principalOf } from '../auth/http.js'
import { hasScope, principalKey } from '../auth/principal.js'
import { wireEnvelope } from '../core/envelope.js'
import { TollgateError } from '../core/errors.js'
import { streamTurnEvents, type SseFrames } from './sse.js'

const LAST_EVENT_ID = /^(0|[1-9][0-9]{0,15})$/

/** Whether the client asked for server-sent events. */
export function wantsEventStream (request: FastifyRequest): boolean {
  return String(request.headers.accept ?? '').includes('text/event-stream')
}

/**
 * Where a stream resumes: the `Last-Event-ID` header, which is newer than the URL's `after_seq`,
 * else `after_seq` (bounded by its schema, EventCursor). The header gets the same bounds: a
 * decimal integer from 0 to 2^53 - 1, so the seq compared with the log is the one the client sent.
 */
function resumePoint (request: FastifyRequest): number {
  const header = request.headers['last-event-id']
  if (typeof header === 'string' && header !== '') {
    const seq = LAST_EVENT_ID.test(header) ? Number(header) : Number.NaN
    if (!Number.isSafeInteger(seq)) throw new TollgateError('INVALID_REQUEST', { detail: 'Last-Event-ID must be the seq of an event of this turn (an integer from 0 to 2^53 - 1)' })
    return seq
  }
  return (request.query as { after_seq?: number }).after_seq ?? 0
}

export async function turnEventsOverHttp (
  gateway: Gateway, request: FastifyRequest, reply: FastifyReply, frames: SseFrames
): Promise<unknown> {
  const { turns, connections } = gateway
  const { id } = request.params as { id: string }
  const principal = principalOf(request)
  const afterSeq = resumePoint(request)
  if (!wantsEventStream(request)) {
    const { turn, replay } = await turns.replay(principal, id, afterSeq)
    if (replay.kind === 'gap' || (replay.kind === 'unknown' && turn.last_seq > afterSeq)) {
      throw new TollgateError('REPLAY_GAP')
    }
    const events = replay.kind === 'events' ? replay.events.map(wireEnvelope) : []
    return { turn_id: turn.turn_id, status: turn.status, events }
  }
  const turn = await turns.get(principal, id)
  // Nothing will ever follow: 204 also tells an EventSource to stop reconnecting.
  if (turn.status !== 'running' && afterSeq >= turn.last_seq) return await reply.code(204).send()
  const connection = connections.open('sse', principalKey(principal), hasScope(principal, 'approvals:answer'), false)
  connection.turns.add(id)
  try {
    const onClose = (): void => { connections.close(connection.id) }
    await streamTurnEvents(gateway, reply, { turnId: id, afterSeq, knownLastSeq: turn.last_seq, onClose, frames })
  } catch (err) {
    connections.close(connection.id)
    throw err
  }
  return undefined
}
