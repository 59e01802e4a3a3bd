/**
 * Node wiring of the client: the `ws` package as WebSocket, Node's global fetch. The only
 * Node-specific file of the SDK besides the terminal client.
 */
import { WebSocket } from 'ws'
import { TollgateClient, type ClientOptions } from './client.js'
import type { WebSocketFactory } from './types.js'

// Everything the platform-neutral entry exports, so a Node program imports from one place
// (`TurnEvent` and the other wire types included).
export * from './index.js'

/** `ws` implements the WHATWG handler properties; its event types are only nominally different. */
export const NodeWebSocket = WebSocket as unknown as WebSocketFactory

export function createNodeClient (options: Omit<ClientOptions, 'WebSocket'>): TollgateClient {
  return new TollgateClient({ ...options, WebSocket: NodeWebSocket })
}
