/**
 * /v1/turns: start (202, SSE stream, or ?wait=true), read, replay events, cancel.
 * Behaviour lives in TurnService; starting over HTTP/SSE in src/transport/http-turn.ts.
 */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { Problem, TurnIdParams } from '../schemas/common.js'
import { DEFAULT_PAGE_LIMIT } from '../schemas/approval.js'
import {
  CancelResult, EventsHeaders, EventsPage, EventsQuery, Turn, TurnAccepted, TurnEventStream, TurnRequest, TurnsPage, TurnsQuery,
  TurnStartQuery
} from '../schemas/turn.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { turnEventsOverHttp } from '../src/transport/http-events.js'
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
    schema: {
      summary: 'Replay a turn\'s events after a seq, or stream them',
      description: 'JSON by default: the retained events after `after_seq`. With `Accept: text/event-stream`: server-sent events, ' +
        'replay then live (`id:` = seq), resuming after the `Last-Event-ID` header when given (it wins over `after_seq`), a comment ' +
        'line every `server.sse_keepalive_ms`, ending after the terminal event; 204 when the turn has ended and nothing is left to send. ' +
        'This stream never owns the turn: dropping it cancels nothing.',
      params: TurnIdParams,
      querystring: EventsQuery,
      headers: EventsHeaders,
      response: {
        200: {
          description: 'The events: a page (JSON) or a stream (`Accept: text/event-stream`)',
          content: { 'application/json': { schema: EventsPage }, 'text/event-stream': { schema: TurnEventStream } }
        },
        204: { description: 'Event stream requested for an ended turn with nothing after Last-Event-ID / after_seq', type: 'null' },
        400: Problem,
        401: Problem,
        404: Problem,
        410: Problem
      }
    }
  }, async (request, reply) => await turnEventsOverHttp(app.gateway, request, reply))

  app.get('/v1/turns', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'List the principal\'s turns',
      description: 'Newest first, optionally of one session and/or in one status; only the caller\'s own turns.',
      querystring: TurnsQuery,
      response: { 200: TurnsPage, 400: Problem, 401: Problem }
    }
  }, async (request) => {
    const q = request.query as TurnsQuery
    return await turns.listTurns(principalOf(request), {
      limit: q.limit ?? DEFAULT_PAGE_LIMIT,
      ...(q.session_id === undefined ? {} : { sessionId: q.session_id }),
      ...(q.status === undefined ? {} : { status: q.status }),
      ...(q.cursor === undefined ? {} : { cursor: q.cursor })
    })
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
