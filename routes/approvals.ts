/** REST fallback for approval answers (the WebSocket `approval.respond` frame is the main door). */
import type { FastifyInstance } from 'fastify'
import { Problem } from '../schemas/common.js'
import { ApprovalAnswer, ApprovalAnswerResult, ApprovalParams } from '../schemas/approval.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { principalKey } from '../src/auth/principal.js'

export default async function approvalRoutes (app: FastifyInstance): Promise<void> {
  const { turns, auth } = app.gateway
  app.post('/v1/approvals/:request_id', {
    onRequest: authenticate(auth, 'approvals:answer'),
    schema: {
      summary: 'Answer a pending approval request',
      params: ApprovalParams,
      body: ApprovalAnswer,
      response: { 200: ApprovalAnswerResult, 400: Problem, 401: Problem, 403: Problem, 404: Problem, 409: Problem }
    }
  }, async (request) => {
    const principal = principalOf(request)
    const { request_id: requestId } = request.params as { request_id: string }
    const body = request.body as ApprovalAnswer
    const { turnId } = await turns.answerApproval(principal, requestId, {
      decision: body.decision,
      ...(body.replacement === undefined ? {} : { replacement: body.replacement }),
      decidedBy: `rest:${principalKey(principal)}`,
      channel: 'rest'
    })
    return { request_id: requestId, turn_id: turnId, decision: body.decision }
  })
}
