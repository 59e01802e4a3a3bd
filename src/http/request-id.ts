/**
 * `x-request-id`: every request gets one id, used as the log's `reqId` and echoed on every
 * response (errors, 404s, refused and accepted WebSocket upgrades included). A caller's own id is
 * kept when it is well-formed, so one id can follow a request through proxies and services;
 * anything else (too long, control characters, log-forging newlines) is replaced, never trusted.
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'
import type { WebSocketServer } from 'ws'

export const REQUEST_ID_HEADER = 'x-request-id'

/** Well-formed: 1-128 characters of letters, digits and `.`, `_`, `:`, `-` (UUIDs, ULIDs, trace ids). */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/

export function newRequestId (): string {
  return `req_${randomUUID()}`
}

export function acceptedRequestId (incoming: string | string[] | undefined): string | undefined {
  return typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming) ? incoming : undefined
}

/** Request ids of the raw requests, for the parts of the server that only see the raw request. */
export class RequestIds {
  private readonly ids = new WeakMap<IncomingMessage, string>()

  /** fastify's `genReqId`: called once per request, before any hook. */
  readonly assign = (req: IncomingMessage): string => {
    const id = acceptedRequestId(req.headers[REQUEST_ID_HEADER]) ?? newRequestId()
    this.ids.set(req, id)
    return id
  }

  of (req: IncomingMessage): string | undefined {
    return this.ids.get(req)
  }
}

/**
 * Echoes the id on every response: set by the first onRequest hook (install it before any route),
 * so a refusal by any later hook or the not-found handler carries it too.
 */
export function echoRequestIds (app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    void reply.header(REQUEST_ID_HEADER, request.id)
  })
}

/** The 101 of an accepted upgrade is written by `ws`, which announces its headers first. */
export function echoRequestIdsOnUpgrade (server: WebSocketServer, ids: RequestIds): void {
  server.on('headers', (headers: string[], req: IncomingMessage) => {
    const id = ids.of(req)
    if (id !== undefined) headers.push(`${REQUEST_ID_HEADER}: ${id}`)
  })
}
