/**
 * Requests refused before they reach a route, answered in the gateway's own form (problem JSON
 * with a stable code and an `x-request-id`) instead of Node's bare status line or fastify's own
 * JSON: what Node's HTTP parser refuses (headers over its `maxHeaderSize`, a malformed request, a
 * request that took too long to arrive) and what fastify's router refuses (a malformed URL, a path
 * parameter longer than any id).
 */
import { maxHeaderSize, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { TollgateError, toProblem } from '../core/errors.js'
import { newRequestId, REQUEST_ID_HEADER } from './request-id.js'

/** The longest id a path may carry (schemas/common.ts: OpaqueId, ClientId); fastify's `maxParamLength`. */
export const MAX_PATH_PARAM_CHARS = 128

function parserRefusal (code: string | undefined): TollgateError {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new TollgateError('HEADERS_TOO_LARGE', `the request headers exceed ${maxHeaderSize} bytes in all`)
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return new TollgateError('REQUEST_TIMEOUT')
  return new TollgateError('INVALID_REQUEST', 'malformed HTTP request')
}

/** fastify's `clientErrorHandler`. */
export function answerClientError (log: FastifyBaseLogger): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    // A reset connection has nobody left to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const problem = toProblem(parserRefusal(err.code))
    const reqId = newRequestId()
    log.debug({ reqId, code: problem.code, err }, 'refused a request the HTTP parser could not accept')
    if (socket.writable) {
      const body = JSON.stringify(problem)
      socket.write(`HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? ''}\r\n` +
        'connection: close\r\ncontent-type: application/problem+json; charset=utf-8\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\n${REQUEST_ID_HEADER}: ${reqId}\r\n\r\n${body}`)
    }
    socket.destroy(err)
  }
}

/** fastify's `frameworkErrors`: the router's refusals, which no hook or error handler sees. */
export function answerFrameworkError (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const refusal = error.code === 'FST_ERR_BAD_URL'
    ? new TollgateError('INVALID_REQUEST', 'the URL is not validly encoded')
    : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new TollgateError('INVALID_REQUEST', `a path parameter is longer than ${MAX_PATH_PARAM_CHARS} characters`)
      : new TollgateError('INTERNAL')
  if (refusal.code === 'INTERNAL') request.log.error({ err: error }, 'the router failed')
  const problem = toProblem(refusal)
  void reply.code(problem.status).header(REQUEST_ID_HEADER, request.id).type('application/problem+json').send(problem)
}
