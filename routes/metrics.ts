/**
 * GET /metrics: Prometheus text exposition of this gateway's registry. Unauthenticated like
 * /healthz (scrapers rarely carry bearer tokens); labels hold no ids or secrets, but counts
 * still describe traffic, so serve it on a private network or turn it off (`metrics.enabled`).
 */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'

export default async function metricsRoutes (app: FastifyInstance): Promise<void> {
  const { metrics } = app.gateway
  if (metrics === null) return
  app.get('/metrics', {
    schema: { summary: 'Prometheus metrics (text exposition format)', produces: ['text/plain'], response: { 200: Type.String() } }
  }, async (_request, reply) => {
    return await reply.type(metrics.contentType).send(await metrics.exposition())
  })
}
