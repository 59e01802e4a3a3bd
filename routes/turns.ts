/**
 * /v1/turns: start (202, SSE stream, or ?wait=true), read, replay events, cancel.
 * Behaviour lives in TurnService; this file only adapts HTTP.
 */
import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { Type } from '@sinclair/typebox'
import { Problem, TurnIdParams } from '../schemas/common.js'
import { CancelResult, EventsPage, EventsQuery, Turn, TurnAccepted, TurnEventStream, TurnRequest, TurnStartQuery } from '../schemas/turn.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { hasScope, principalKey } from '../src/auth/principal.js'
import { TollgateError } from '../src/errors.js'
import { followTurn } from '../src/gateway/follow.js'
import type { TurnRecord } from '../src/store/store.js'

/** A client that goes away before the response finished: `request.signal` is unreliable here. */
function onClientGone (reply: FastifyReply, fn: () => void): void {
  reply.raw.on('close', () => { if (!reply.raw.writableFinished) fn() })
}

export function publicTurn (turn: TurnRecord): Omit<TurnRecord, 'owner' | 'receipt_key_id'> {
  const { owner: _owner, receipt_key_id: _keyId, ...rest } = turn
  return rest
}

export default async function turnRoutes (app: FastifyInstance): Promise<void> {
  const { turns, connections, bus, auth, config, metrics } = app.gateway

  app.post('/v1/turns', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: {
      summary: 'Start a turn',
      description: '202 by default (no owner unless owner_connection names a WebSocket). With `Accept: text/event-stream` the events stream as SSE (`id:` = seq) and the request owns the turn; with `?wait=true` the answer is 200 with the final turn and the request owns it.',
      body: TurnRequest,
      querystring: TurnStartQuery,
      response: {
        200: {
          description: 'With `?wait=true`: the finished turn. With `Accept: text/event-stream`: the turn\'s events as they happen.',
          headers: { 'x-turn-id': { description: 'The started turn (SSE answers)', schema: Type.String() } },
          content: { 'application/json': { schema: Turn }, 'text/event-stream': { schema: TurnEventStream } }
        },
        202: TurnAccepted,
        400: Problem,
        401: Problem,
        403: Problem,
        409: Problem,
        429: Problem
      }
    }
  }, async (request, reply) => {
    const principal = principalOf(request)
    const body = request.body as TurnRequest
    const { wait } = request.query as { wait?: boolean }
    const sse = String(request.headers.accept ?? '').includes('text/event-stream')
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
    let started
    try {
      started = await turns.start(principal, body, { ownerConnection: connection.id, channel: sse ? 'sse' : 'http' })
    } catch (err) {
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

    // Hijacked: headers set by hooks (x-request-id) are passed on by hand.
    const hookHeaders = reply.getHeaders() as OutgoingHttpHeaders
    reply.hijack()
    const raw = reply.raw
    raw.writeHead(200, {
      ...hookHeaders,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-turn-id': turn.turn_id
    })
    const end = (): void => {
      connections.close(connection.id)
      if (!raw.writableEnded) raw.end()
    }
    const followed = await followTurn({
      bus,
      turnId: turn.turn_id,
      afterSeq: 0,
      knownLastSeq: 0,
      deliver: (envelope) => {
        if (raw.writableEnded) return
        // Same slow-consumer policy as the WebSocket: a reader this far behind loses the stream.
        if (raw.writableLength > config.ws.max_buffered_bytes) {
          app.log.warn({ turn_id: turn.turn_id, buffered: raw.writableLength }, 'closing a slow SSE consumer')
          raw.destroy()
          return
        }
        const { session_id: _s, ...wire } = envelope
        raw.write(`id: ${envelope.seq}\nevent: ${envelope.event.kind}\ndata: ${JSON.stringify(wire)}\n\n`)
        metrics?.eventSent('sse')
      },
      onEnd: end
    })
    if (followed.kind === 'following') raw.on('close', followed.unsubscribe)
    else end()
  })

  app.get('/v1/turns/:id', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: { summary: 'Get a turn', params: TurnIdParams, response: { 200: Turn, 401: Problem, 404: Problem } }
  }, async (request) => {
    const { id } = request.params as { id: string }
    return publicTurn(await turns.get(principalOf(request), id))
  })

  app.get('/v1/turns/:id/events', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: { summary: 'Replay a turn\'s events after a seq', params: TurnIdParams, querystring: EventsQuery, response: { 200: EventsPage, 401: Problem, 404: Problem, 410: Problem } }
  }, async (request) => {
    const { id } = request.params as { id: string }
    const afterSeq = (request.query as { after_seq?: number }).after_seq ?? 0
    const { turn, replay } = await turns.replay(principalOf(request), id, afterSeq)
    if (replay.kind === 'gap' || (replay.kind === 'unknown' && turn.last_seq > afterSeq)) {
      throw new TollgateError('REPLAY_GAP', 'these events are no longer retained; refetch the turn')
    }
    const events = replay.kind === 'events' ? replay.events.map(({ session_id: _s, ...e }) => e) : []
    return { turn_id: turn.turn_id, status: turn.status, events }
  })

  app.delete('/v1/turns/:id', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: { summary: 'Cancel a turn', params: TurnIdParams, response: { 200: CancelResult, 401: Problem, 404: Problem } }
  }, async (request) => {
    const { id } = request.params as { id: string }
    const turn = await turns.cancel(principalOf(request), id, 'cancelled by client')
    return { turn_id: turn.turn_id, status: turn.status }
  })
}
