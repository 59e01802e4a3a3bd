/**
 * /v1/turns: start (202, SSE stream, or ?wait=true), read, replay events, cancel.
 * Behaviour lives in TurnService; starting over HTTP/SSE in src/transport/http-turn.ts.
 */
import type { FastifyInstance } from 'fastify'
import { Problem, TurnIdParams } from '../schemas/common.js'
import { CancelResult, Turn, TurnsPage, TurnsQuery } from '../schemas/turn.js'
import { StartTurnRoute, TurnEventsRoute } from '../schemas/turn-routes.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { turnEventsOverHttp } from '../src/transport/http-events.js'
import { publicTurn, startTurnOverHttp } from '../src/transport/http-turn.js'
import { createSseFrames } from '../src/transport/sse.js'

export default async function turnRoutes (app: FastifyInstance): Promise<void> {
  const { turns, auth } = app.gateway
  // Every SSE stream of these routes shares it: an event followed by many streams is encoded once.
  const frames = createSseFrames()

  app.post('/v1/turns', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: StartTurnRoute
  }, async (request, reply) => await startTurnOverHttp(app.gateway, request, reply, frames))

  app.get('/v1/turns/:id', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: { summary: 'Get a turn', params: TurnIdParams, response: { 200: Turn, 401: Problem, 404: Problem } }
  }, async (request) => {
    const { id } = request.params as { id: string }
    return publicTurn(await turns.get(principalOf(request), id))
  })

  app.get('/v1/turns/:id/events', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: TurnEventsRoute
  }, async (request, reply) => await turnEventsOverHttp(app.gateway, request, reply, frames))

  app.get('/v1/turns', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'List the principal\'s turns',
      description: 'Newest first, optionally of one session and/or in one status; only the caller\'s own turns.',
      querystring: TurnsQuery,
      response: { 200: TurnsPage, 400: Problem, 401: Problem }
    }
  }, async (request) => {
    return await turns.listing.turns(principalOf(request), request.query as TurnsQuery)
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
