/**
 * The HTTP error handler: every refusal leaves as problem JSON with a stable `code` (see
 * core/errors.ts), whether a route threw a TollgateError or Fastify refused the request itself.
 * Status and message come from the error, which took them from the catalogue; nothing is re-typed here.
 */
import type { FastifyError, FastifyInstance } from 'fastify'
import type { Config } from '../core/config.js'
import { DEFAULT_RETRY_AFTER_S, RETRY_AFTER_S, TollgateError, toProblem, type ErrorCode } from '../core/errors.js'

export function installErrorHandlers (app: FastifyInstance, config: Config): void {
  app.setErrorHandler((err: FastifyError | TollgateError, request, reply) => {
    let problem
    if (err instanceof TollgateError) {
      problem = toProblem(err)
    } else if (err.validation !== undefined) {
      problem = toProblem(new TollgateError('INVALID_REQUEST', { detail: `${err.validationContext ?? 'body'}${err.message.replace(/^(body|querystring|params|headers)/, '')}` }))
    } else if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      problem = toProblem(new TollgateError('PAYLOAD_TOO_LARGE', `the body exceeds ${config.server.body_limit_bytes} bytes`))
    } else if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || err instanceof SyntaxError) {
      problem = toProblem(new TollgateError('INVALID_JSON'))
    } else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      problem = toProblem(new TollgateError('UNSUPPORTED_MEDIA_TYPE'))
    } else if (err.statusCode === 400) {
      problem = toProblem(new TollgateError('INVALID_REQUEST', err.message))
    } else if (typeof err.statusCode === 'number' && err.statusCode > 400 && err.statusCode < 500) {
      // Rare framework refusals (bad URL encodings, constraint misses): one code per status.
      problem = { type: `https://tollgate.dev/problems/http-${err.statusCode}`, title: err.message, status: err.statusCode, code: `HTTP_${err.statusCode}` }
    } else {
      request.log.error({ err }, 'unhandled error')
      problem = toProblem(new TollgateError('INTERNAL'))
    }
    if (problem.status === 429) void reply.header('retry-after', String(RETRY_AFTER_S[problem.code as ErrorCode] ?? DEFAULT_RETRY_AFTER_S))
    void reply.code(problem.status).type('application/problem+json').send(problem)
  })
  app.setNotFoundHandler((request, reply) => {
    const problem = toProblem(new TollgateError('NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0] ?? ''}`))
    void reply.code(problem.status).type('application/problem+json').send(problem)
  })
}
