/** The effective tool list of an agent: what its turns may see, and which need approval. */
import type { FastifyInstance } from 'fastify'
import { Problem } from '../schemas/common.js'
import { ToolList, ToolsQuery } from '../schemas/tools.js'
import { SessionGrants } from '../src/approval/grants.js'
import { ApprovalManager } from '../src/approval/policy.js'
import { authenticate } from '../src/auth/http.js'
import { mcpOffer } from '../src/tools/scope/offer.js'
import { resolveAgent } from '../src/turn/context.js'
import { assembleScopedRegistry } from '../src/tools/scope/scoped.js'

export default async function toolRoutes (app: FastifyInstance): Promise<void> {
  const { config, auth, turns, mcp } = app.gateway
  app.get('/v1/tools', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: { summary: 'List the effective tools of an agent', querystring: ToolsQuery, response: { 200: ToolList, 400: Problem, 401: Problem } }
  }, async (request) => {
    const name = (request.query as { agent?: string }).agent ?? config.default_agent
    const { agent, runtime, risk } = resolveAgent(config, name)
    const offer = mcpOffer(config, agent, runtime, mcp)
    const registry = assembleScopedRegistry({ catalog: turns.catalog, agent, risk, ...(offer === undefined ? {} : { mcp: offer }) })
    const approval = new ApprovalManager(risk, new SessionGrants())
    return {
      agent: name,
      tools: registry.list().map((t) => ({
        name: t.name,
        description: t.description,
        parameters: t.parameters,
        provenance: t.attribution.provenance,
        source: t.attribution.source,
        approval: approval.requirement(t.name)
      }))
    }
  })
}
