/**
 * GET /v1/audit?format=jsonl: the caller's tenant's audit chain, oldest first, `limit` entries
 * after `after`; the `tollgate-audit-next` header gives the `after` of the next page when there
 * may be one. Verify a download offline with `npx tollgate audit verify FILE`.
 */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { AuditQuery } from '../schemas/audit.js'
import { Problem } from '../schemas/common.js'
import { authenticate, principalOf } from '../src/auth/http.js'

export default async function auditRoutes (app: FastifyInstance): Promise<void> {
  const { audit, auth } = app.gateway
  app.get('/v1/audit', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'Export your tenant\'s hash-chained audit (JSON Lines of AuditEntry, paginated by seq)',
      querystring: AuditQuery,
      produces: ['application/x-ndjson'],
      response: { 200: Type.String(), 400: Problem, 401: Problem, 403: Problem }
    }
  }, async (request, reply) => {
    const { after, limit } = request.query as AuditQuery
    // Entries the turns recorded so far are appended before the page is read.
    await audit.settled()
    const entries = await audit.ledger.read(principalOf(request).tenant, after, limit)
    const last = entries.at(-1)
    if (entries.length === limit && last !== undefined) void reply.header('tollgate-audit-next', String(last.seq))
    return await reply.type('application/x-ndjson').send(entries.map((e) => `${JSON.stringify(e)}\n`).join(''))
  })
}
