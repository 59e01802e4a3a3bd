/**
 * Steering over HTTP: `POST /v1/turns/:id/messages` queues a message for a running turn's next
 * model call. Behaviour lives in TurnService.steer (the WS `turn.steer` frame calls the same).
 */
import type { FastifyInstance } from 'fastify'
import { Problem, TurnIdParams } from '../schemas/common.js'
import { SteerAccepted, SteerRequest } from '../schemas/steering.js'
import { authenticate, principalOf } from '../src/auth/http.js'

export default async function steeringRoutes (app: FastifyInstance): Promise<void> {
  const { turns, auth } = app.gateway
  app.post('/v1/turns/:id/messages', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: {
      summary: 'Add a message to a running turn (steering)',
      description: 'The message joins the model\'s history as a user message before the turn\'s next model call, after any ' +
        'tool results of the current round, in the order given; it is recorded as a `user.message` event (202 once stored). ' +
        'A message that arrives while the model writes its final answer makes the turn run one more iteration. ' +
        'At most `turns.max_steering_messages` wait at once (429 `STEERING_QUEUE_FULL`); a turn that has ended or is ending ' +
        'answers 409 `STEERING_CLOSED`. The turn\'s principal may steer it, and so may a principal of the same tenant with the `turns:steer` ' +
        'scope; anyone else gets 404 `TURN_NOT_FOUND`.',
      params: TurnIdParams,
      body: SteerRequest,
      response: { 202: SteerAccepted, 400: Problem, 401: Problem, 403: Problem, 404: Problem, 409: Problem, 429: Problem, 503: Problem }
    }
  }, async (request, reply) => {
    const { id } = request.params as { id: string }
    const { message } = request.body as SteerRequest
    return await reply.code(202).send(await turns.steer(principalOf(request), id, message))
  })
}
