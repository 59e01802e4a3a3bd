/**
 * WebSocket /v1/acp: the Agent Client Protocol (JSON-RPC 2.0, subprotocol `tollgate.acp.v1`) for
 * browser-based editors; the same agent as `tollgate acp`. Authenticated like /v1/ws (a
 * `bearer.<token>` subprotocol entry, the Authorization header, or the query token where allowed)
 * and needs `turns:write`. Behaviour: src/transport/acp-socket.ts.
 */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { authenticate, offeredProtocols, principalOf } from '../src/auth/http.js'
import { TollgateError } from '../src/core/errors.js'
import { ACP_PROTOCOL, serveAcpSocket } from '../src/transport/acp-socket.js'
import { checkOrigin } from '../src/transport/ws-socket.js'

export default async function acpRoutes (app: FastifyInstance): Promise<void> {
  const gateway = app.gateway
  app.get('/v1/acp', {
    onRequest: [
      checkOrigin(gateway),
      authenticate(gateway.auth, 'turns:write', { upgrade: true, allowQueryToken: gateway.config.auth.allow_query_token }),
      async (request) => {
        if (request.ws && !offeredProtocols(request).includes(ACP_PROTOCOL)) {
          throw new TollgateError('SUBPROTOCOL_REQUIRED', `offer the ${ACP_PROTOCOL} WebSocket subprotocol (Sec-WebSocket-Protocol)`)
        }
      }
    ],
    schema: {
      summary: 'WebSocket: the Agent Client Protocol v1 (JSON-RPC 2.0), each session/prompt run as a turn',
      description: 'Subprotocol `tollgate.acp.v1`; one JSON-RPC message per text frame. See docs/guides/editors.md for the mapping.',
      querystring: Type.Object({
        agent: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$', description: 'The agent every session runs' })),
        access_token: Type.Optional(Type.String({
          maxLength: 65_536,
          description: 'Least-preferred way to send the token, only with auth.allow_query_token = true; prefer the bearer.<token> subprotocol'
        }))
      })
    },
    websocket: true
  }, (socket, request) => {
    const { agent } = request.query as { agent?: string }
    serveAcpSocket(gateway, socket, principalOf(request), agent === undefined ? {} : { agent })
  })
}
