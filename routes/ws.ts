/**
 * WebSocket /v1/ws: one socket multiplexes many turns. It subscribes (with replay), starts turns
 * it then owns, answers approvals and cancels. Closing the socket cancels the turns it owns
 * unless they were started with detach:true. Socket rules: src/transport/ws-socket.ts; frames:
 * src/transport/ws-session.ts.
 */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { authenticate, offeredProtocols, principalOf, WS_PROTOCOL } from '../src/auth/http.js'
import { TollgateError } from '../src/core/errors.js'
import { createEventEncoder } from '../src/transport/ws-session.js'
import { checkOrigin, serveSocket } from '../src/transport/ws-socket.js'

export default async function wsRoutes (app: FastifyInstance): Promise<void> {
  const gateway = app.gateway
  const encodeEvent = createEventEncoder()
  app.get('/v1/ws', {
    onRequest: [
      checkOrigin(gateway),
      authenticate(gateway.auth, null, { upgrade: true, allowQueryToken: gateway.config.auth.allow_query_token }),
      async (request) => {
        // A client that does not name the protocol may not speak it; refusing keeps every socket on
        // a contract both sides agreed to (and the version in the name) instead of guessing. A plain
        // GET is no upgrade at all: it gets 426 UPGRADE_REQUIRED from the preHandler instead.
        if (request.ws && !offeredProtocols(request).includes(WS_PROTOCOL)) {
          throw new TollgateError('SUBPROTOCOL_REQUIRED', `offer the ${WS_PROTOCOL} WebSocket subprotocol (Sec-WebSocket-Protocol)`)
        }
      }
    ],
    schema: {
      summary: 'WebSocket: turns, events, approvals, cancellation (frames in asyncapi.yaml)',
      querystring: Type.Object({
        access_token: Type.Optional(Type.String({
          maxLength: 65_536,
          description: 'Least-preferred way to send the token, only with auth.allow_query_token = true; prefer the bearer.<token> subprotocol'
        }))
      })
    },
    websocket: true
  }, (socket, request) => { serveSocket(gateway, socket, principalOf(request), encodeEvent) })
}
