/** The effective tool list of an agent: what its turns may see, and which need approval. */
import type { FastifyInstance } from 'fastify'
import { Problem } from '../schemas/common.js'
import { ToolList, ToolsQuery } from '../schemas/tools.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { requireAgentAccess } from '../src/service/agent-access.js'
import { effectiveTools } from '../src/service/tool-list.js'

export default async function toolRoutes (app: FastifyInstance): Promise<void> {
  const { config, auth, turns, mcp } = app.gateway
  app.get('/v1/tools', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'List the effective tools of an agent',
      querystring: ToolsQuery,
      response: { 200: ToolList, 400: Problem, 401: Problem, 403: Problem }
    }
  }, async (request) => {
    const agent = (request.query as { agent?: string }).agent ?? config.default_agent
    requireAgentAccess(config, principalOf(request), agent)
    return effectiveTools(config, turns.catalog, mcp, agent)
  })
}
