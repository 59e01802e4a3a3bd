/** Session history, as the model will see it on the session's next turn. */
import type { FastifyInstance } from 'fastify'
import { Problem } from '../schemas/common.js'
import { Session, SessionParams } from '../schemas/session.js'
import { authenticate, principalOf } from '../src/auth/http.js'

export default async function sessionRoutes (app: FastifyInstance): Promise<void> {
  const { turns, auth } = app.gateway
  app.get('/v1/sessions/:id', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: { summary: 'Get a session and its history', params: SessionParams, response: { 200: Session, 401: Problem, 404: Problem } }
  }, async (request) => {
    const { id } = request.params as { id: string }
    const s = await turns.session(principalOf(request), id)
    return {
      session_id: s.session_id,
      agent: s.agent,
      created_at: s.created_at,
      updated_at: s.updated_at,
      turn_ids: s.turn_ids,
      always_allowed_tools: s.always_allowed,
      history: s.history.filter((m) => m.role !== 'system')
    }
  })
}
