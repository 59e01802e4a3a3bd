/** Liveness and readiness; unauthenticated by design, and they reveal nothing. */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'

const Health = Type.Object({ status: Type.String() })

export default async function healthRoutes (app: FastifyInstance): Promise<void> {
  app.get('/healthz', { schema: { summary: 'Liveness', response: { 200: Health } } }, async () => ({ status: 'ok' }))
  app.get('/readyz', { schema: { summary: 'Readiness', response: { 200: Health, 503: Health } } }, async (_request, reply) => {
    if (app.gateway.turns.closing) return await reply.code(503).send({ status: 'shutting_down' })
    if (!app.gateway.storeReachable()) return await reply.code(503).send({ status: 'store_unavailable' })
    if (!app.gateway.busReachable()) return await reply.code(503).send({ status: 'bus_unavailable' })
    // An MCP server being down costs some tools, not the gateway: still ready, but said so.
    return { status: app.gateway.mcp.degraded() ? 'degraded' : 'ready' }
  })
}
