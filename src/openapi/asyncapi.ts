/**
 * asyncapi.yaml (AsyncAPI 3.0) for /v1/ws from schemas/ws.ts and schemas/events.ts: one message
 * per frame type, one operation per client frame with its direct answer as the reply (matched
 * by `ref`), and the event stream the gateway sends. Operations are from the gateway's side:
 * `receive` = client → gateway, `send` = gateway → client.
 */
import { ClientFrameSchemas, ServerFrame } from '../../schemas/ws.js'
import { API_VERSION } from './openapi.js'
import { SchemaComponents, plainSchema, type JsonObject } from './schema.js'

/** The direct answer to each client frame (any of them may instead get an `error` with its ref). */
export const REPLIES: Readonly<Record<keyof typeof ClientFrameSchemas, string>> = {
  hello: 'welcome',
  subscribe: 'subscribed',
  unsubscribe: 'unsubscribed',
  'turn.start': 'turn.accepted',
  'approval.respond': 'approval.accepted',
  'tool.result': 'tool.result.accepted',
  cancel: 'cancel.accepted',
  'turn.steer': 'steer.accepted',
  ping: 'pong'
}

const SUMMARIES: Readonly<Record<string, string>> = {
  hello: 'Open the conversation; answered with the connection id and heartbeat interval',
  subscribe: 'Follow a turn (replay after after_seq, then live) or every turn of a session',
  unsubscribe: 'Stop following a turn or session',
  'turn.start': 'Start a turn owned by this socket (same body as POST /v1/turns)',
  'approval.respond': 'Answer a pending approval request',
  'tool.result': 'Send the result of a client tool call the turn waits for (as POST /v1/turns/{id}/tool-results)',
  'tool.result.accepted': 'Answer to tool.result: the waiting call took the result',
  cancel: 'Cancel a turn',
  'turn.steer': 'Add a message to a running turn: it joins the history before the turn\'s next model call (steering)',
  ping: 'Application-level ping',
  welcome: 'Answer to hello',
  event: 'One turn event; seq strictly increasing per turn from 1, no gaps',
  subscribed: 'Answer to subscribe; the missed events follow it',
  unsubscribed: 'Answer to unsubscribe',
  'turn.accepted': 'Answer to turn.start',
  'approval.accepted': 'Answer to approval.respond',
  'cancel.accepted': 'Answer to cancel, once the turn recorded its terminal event',
  'steer.accepted': 'Answer to turn.steer, once its user.message event is stored',
  pong: 'Answer to ping',
  error: 'A frame failed; carries the ref of that frame when it had one. Never closes the socket'
}

/** The token transports of the upgrade request, in the gateway's order of precedence. */
const SECURITY_SCHEMES: Readonly<Record<string, JsonObject>> = {
  bearer: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: '`Authorization: Bearer <JWT>` on the upgrade request, or (browsers) `bearer.<JWT>` as a second WebSocket subprotocol'
  },
  cookie: { type: 'httpApiKey', name: 'tollgate_token', in: 'cookie', description: 'The JWT in a cookie; the Origin must be allowed' },
  query: {
    type: 'httpApiKey',
    name: 'access_token',
    in: 'query',
    description: 'Least preferred (URLs end up in logs); off with auth.allow_query_token = false'
  }
}

function frameType (schema: unknown): string {
  const type = (plainSchema(schema).properties as Record<string, { const?: unknown }> | undefined)?.type?.const
  if (typeof type !== 'string') throw new Error('a WebSocket frame schema has no literal type')
  return type
}

function camel (name: string): string {
  return name.split(/[^A-Za-z0-9]+/).map((w) => `${w.charAt(0).toUpperCase()}${w.slice(1)}`).join('')
}

export function buildAsyncApi (): JsonObject {
  const components = new SchemaComponents('#/components/schemas/')
  const messages: JsonObject = {}
  const channelMessages: JsonObject = {}
  const message = (name: string, schema: unknown): void => {
    messages[name] = {
      name,
      title: name,
      summary: SUMMARIES[name] ?? name,
      payload: components.use(schema),
      correlationId: { location: '$message.payload#/ref' }
    }
    channelMessages[name] = { $ref: `#/components/messages/${name}` }
  }
  for (const [name, schema] of Object.entries(ClientFrameSchemas)) message(name, schema)
  const serverTypes: string[] = []
  for (const schema of ServerFrame.anyOf) {
    const name = frameType(schema)
    serverTypes.push(name)
    message(name, schema)
  }
  const ref = (name: string): JsonObject => ({ $ref: `#/channels/ws/messages/${name}` })
  const channel = { $ref: '#/channels/ws' }
  // The socket is authenticated once, at the upgrade; any one of the token transports will do.
  const security = Object.keys(SECURITY_SCHEMES).map((name) => ({ $ref: `#/components/securitySchemes/${name}` }))
  const operations: JsonObject = {}
  for (const name of Object.keys(ClientFrameSchemas) as Array<keyof typeof REPLIES>) {
    operations[`receive${camel(name)}`] = {
      action: 'receive',
      channel,
      summary: SUMMARIES[name],
      security,
      messages: [ref(name)],
      reply: { channel, messages: [ref(REPLIES[name]), ref('error')] }
    }
  }
  operations.sendEvent = { action: 'send', channel, summary: SUMMARIES.event, security, messages: [ref('event')] }
  operations.sendError = { action: 'send', channel, summary: SUMMARIES.error, security, messages: [ref('error')] }
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Tollgate WebSocket API',
      version: API_VERSION,
      description: 'One socket multiplexes many turns. Offer the subprotocol `tollgate.v1` (and `bearer.<token>` to authenticate). Every client frame may carry a `ref`, echoed on its direct answer or error. Generated from schemas/ws.ts and schemas/events.ts by `npm run openapi`.'
    },
    defaultContentType: 'application/json',
    channels: {
      ws: {
        address: '/v1/ws',
        title: 'Tollgate WebSocket',
        description: `Client frames: ${Object.keys(ClientFrameSchemas).join(', ')}. Server frames: ${serverTypes.join(', ')}.`,
        messages: channelMessages
      }
    },
    operations,
    components: { messages, schemas: components.entries(), securitySchemes: SECURITY_SCHEMES }
  }
}
