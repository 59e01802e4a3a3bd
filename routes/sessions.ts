/** Session history, as the model will see it on the session's next turn. */
import type { FastifyInstance } from 'fastify'
import { Problem } from '../schemas/common.js'
import { DEFAULT_PAGE_LIMIT } from '../schemas/approval.js'
import { Session, SessionParams, SessionsPage, SessionsQuery } from '../schemas/session.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import type { ChatMessage } from '../src/providers/types.js'
import { scrubText } from '../src/core/security/redact.js'

/**
 * History as shown to a client: every message (the user's, the model's, tool results and call
 * arguments) is scrubbed like every other rendering surface; the stored copy stays raw because
 * the model needs the real data.
 */
function displayMessage (m: ChatMessage): ChatMessage {
  const shown: ChatMessage = { ...m, content: m.content !== null ? scrubText(m.content) : m.content }
  if (m.tool_calls !== undefined) shown.tool_calls = m.tool_calls.map((c) => ({ ...c, arguments: scrubText(c.arguments) }))
  return shown
}

export default async function sessionRoutes (app: FastifyInstance): Promise<void> {
  const { turns, auth } = app.gateway
  app.get('/v1/sessions', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'List the principal\'s sessions',
      description: 'Most recently updated first (a turn starting or ending updates its session); only the caller\'s own sessions.',
      querystring: SessionsQuery,
      response: { 200: SessionsPage, 400: Problem, 401: Problem }
    }
  }, async (request) => {
    const q = request.query as { limit?: number, cursor?: string }
    return await turns.listing.sessions(principalOf(request), {
      limit: q.limit ?? DEFAULT_PAGE_LIMIT,
      ...(q.cursor === undefined ? {} : { cursor: q.cursor })
    })
  })

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
      always_allowed: s.always_allowed,
      always_allowed_tools: s.always_allowed.filter((g) => g.command === undefined).map((g) => g.tool),
      history: s.history.filter((m) => m.role !== 'system').map(displayMessage)
    }
  })
}
