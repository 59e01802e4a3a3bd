/**
 * A plain HTTP request to a WebSocket route: `426 UPGRADE_REQUIRED` problem JSON with
 * `Upgrade: websocket`, instead of @fastify/websocket's empty 404 (the route exists; the request
 * just did not ask to upgrade). Authentication and Origin checks still answer first.
 */
import type { FastifyInstance } from 'fastify'
import { TollgateError } from '../core/errors.js'

export function refusePlainRequestsToWebSockets (app: FastifyInstance): void {
  // Read on first use: by then every route is registered.
  let webSocketUrls: Set<string> | null = null
  app.addHook('preHandler', async (request, reply) => {
    if (request.ws) return
    webSocketUrls ??= new Set(app.routeCatalog.list().filter((route) => route.websocket).map((route) => route.url))
    if (request.routeOptions.url === undefined || !webSocketUrls.has(request.routeOptions.url)) return
    void reply.header('upgrade', 'websocket')
    throw new TollgateError('UPGRADE_REQUIRED')
  })
}
