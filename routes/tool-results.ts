/**
 * POST /v1/turns/:id/tool-results: the result of a client tool's call the turn waits for.
 * Behaviour in src/service/tool-results.ts.
 */
import type { FastifyInstance } from 'fastify'
import { Problem, TurnIdParams } from '../schemas/common.js'
import { ToolResultAccepted, ToolResultBody } from '../schemas/client-tools.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { deliverToolResult } from '../src/service/tool-results.js'

export default async function toolResultRoutes (app: FastifyInstance): Promise<void> {
  const { turns, auth } = app.gateway

  app.post('/v1/turns/:id/tool-results', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: {
      summary: 'Send the result of a client tool call',
      description: 'For a call of one of the turn\'s client_tools that waits (listed in pending_approvals with client_tool: true). ' +
        '404 TURN_NOT_FOUND for another principal\'s turn, 404 TOOL_CALL_NOT_WAITING when no such call waits, ' +
        '409 APPROVAL_ALREADY_RESOLVED or APPROVAL_EXPIRED when its wait is over.',
      params: TurnIdParams,
      body: ToolResultBody,
      response: { 200: ToolResultAccepted, 400: Problem, 401: Problem, 403: Problem, 404: Problem, 409: Problem }
    }
  }, async (request) => {
    const { id } = request.params as { id: string }
    return await deliverToolResult(turns, principalOf(request), id, request.body as ToolResultBody, 'rest')
  })
}
