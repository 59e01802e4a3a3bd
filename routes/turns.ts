/**
 * /v1/turns: start (202, SSE stream, or ?wait=true), read, replay events, cancel.
 * Behaviour lives in TurnService; starting over HTTP/SSE in src/transport/http-turn.ts.
 */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { Problem, TurnIdParams } from '../schemas/common.js'
import { CancelResult, EventsPage, EventsQuery, Turn, TurnAccepted, TurnEventStream, TurnRequest, TurnStartQuery } from '../schemas/turn.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { TollgateError } from '../src/core/errors.js'
import { publicTurn, startTurnOverHttp } from '../src/transport/http-turn.js'

export default async function turnRoutes (app: FastifyInstance): Promise<void> {
  const { turns, auth } = app.gateway

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
  }, async (request, reply) => await startTurnOverHttp(app.gateway, request, reply))

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
      throw new TollgateError('REPLAY_GAP')
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
