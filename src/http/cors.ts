/**
 * CORS for the HTTP API, so a web app on another origin can start turns and answer approvals.
 * Off by default. When on, it admits exactly the origins that may open /v1/ws (one list: the
 * WebSocket origin policy), on the port the request really arrived on; any other origin gets no
 * Access-Control-* header at all, so its browser refuses the answer.
 */
import cors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../core/config.js'
import type { OriginPolicy } from '../core/security/origin-check.js'
import { REQUEST_ID_HEADER } from './request-id.js'

/** Response headers a browser page may read: correlation, the SSE turn id, and 429/503 back-off. */
const EXPOSED_HEADERS = [REQUEST_ID_HEADER, 'x-turn-id', 'Retry-After']
const ALLOWED_HEADERS = ['authorization', 'content-type', 'accept', 'last-event-id', REQUEST_ID_HEADER]
const METHODS = ['GET', 'POST', 'DELETE']

export async function registerCors (app: FastifyInstance, config: Config, origins: OriginPolicy): Promise<void> {
  if (!config.server.cors.enabled) return
  await app.register(cors, {
    delegator: (request, callback) => {
      const origin = request.headers.origin
      // A request without Origin is not a cross-origin browser request: nothing to add.
      const allowed = origin !== undefined && origins.allows(origin, request.raw.socket.localPort)
      callback(null, {
        origin: allowed,
        methods: METHODS,
        allowedHeaders: ALLOWED_HEADERS,
        exposedHeaders: EXPOSED_HEADERS,
        // Bearer tokens travel in Authorization, which CORS allows without credentials mode.
        credentials: false,
        maxAge: config.server.cors.max_age_s
      })
    }
  })
}
