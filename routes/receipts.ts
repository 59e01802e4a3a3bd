/** POST /v1/receipts/verify: checks a tool receipt of one of the caller's turns. */
import type { FastifyInstance } from 'fastify'
import { Problem } from '../schemas/common.js'
import { ReceiptVerifyRequest, ReceiptVerifyResult } from '../schemas/receipts.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { verifyToolReceipt } from '../src/receipts/verify.js'

export default async function receiptRoutes (app: FastifyInstance): Promise<void> {
  const { turns, auth } = app.gateway
  app.post('/v1/receipts/verify', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'Verify a tool receipt of one of your turns while its key lives',
      body: ReceiptVerifyRequest,
      response: { 200: ReceiptVerifyResult, 400: Problem, 401: Problem, 403: Problem, 404: Problem }
    }
  }, async (request) => await verifyToolReceipt(turns, principalOf(request), request.body as ReceiptVerifyRequest))
}
