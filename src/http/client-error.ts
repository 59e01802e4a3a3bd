/**
 * Requests Node's HTTP parser refuses before fastify sees them (headers over the 16 KiB
 * `maxHeaderSize`, a malformed request line, a request that took too long to arrive) are answered
 * in the gateway's own form: problem JSON with a stable code and an `x-request-id`, instead of
 * Node's bare status line.
 */
import { maxHeaderSize, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'
import { TollgateError, toProblem } from '../errors.js'
import { newRequestId, REQUEST_ID_HEADER } from './request-id.js'

function refusal (code: string | undefined): TollgateError {
  if (code === 'HPE_HEADER_OVERFLOW') return new TollgateError('HEADERS_TOO_LARGE', `the request headers exceed ${maxHeaderSize} bytes in all`)
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return new TollgateError('REQUEST_TIMEOUT', 'the request did not arrive in time')
  return new TollgateError('INVALID_REQUEST', 'malformed HTTP request')
}

/** fastify's `clientErrorHandler`. */
export function answerClientError (log: FastifyBaseLogger): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    // A reset connection has nobody left to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const problem = toProblem(refusal(err.code))
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
