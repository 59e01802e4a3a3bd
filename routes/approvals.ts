/**
 * Approvals over HTTP: the principal's pending requests, and answers to them. An answer needs no
 * connection to the turn: any request of the principal with the `approvals:answer` scope may
 * answer, whether or not anyone owns or watches the turn.
 */
import type { FastifyInstance } from 'fastify'
import { Problem } from '../schemas/common.js'
import {
  ApprovalAnswer, ApprovalAnswerResult, ApprovalParams, ApprovalsPage, ApprovalsQuery, DEFAULT_PAGE_LIMIT
} from '../schemas/approval.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { principalKey } from '../src/auth/principal.js'

export default async function approvalRoutes (app: FastifyInstance): Promise<void> {
  const { turns, auth } = app.gateway
  app.get('/v1/approvals', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'List the principal\'s pending approval requests',
      description: 'Newest request first, across the caller\'s running turns (optionally of one session or turn). ' +
        'A request leaves the list once answered, expired or cancelled.',
      querystring: ApprovalsQuery,
      response: { 200: ApprovalsPage, 400: Problem, 401: Problem }
    }
  }, async (request) => {
    const q = request.query as ApprovalsQuery
    return await turns.listing.pendingApprovals(principalOf(request), {
      limit: q.limit ?? DEFAULT_PAGE_LIMIT,
      ...(q.session_id === undefined ? {} : { sessionId: q.session_id }),
      ...(q.turn_id === undefined ? {} : { turnId: q.turn_id }),
      ...(q.cursor === undefined ? {} : { cursor: q.cursor })
    })
  })

  app.post('/v1/approvals/:request_id', {
    onRequest: authenticate(auth, 'approvals:answer'),
    schema: {
      summary: 'Answer a pending approval request',
      description: 'First valid answer wins. 404 APPROVAL_NOT_FOUND for an unknown request and for another principal\'s alike; 409 ' +
        'APPROVAL_ALREADY_RESOLVED (answered), APPROVAL_EXPIRED (timed out, the call was denied) or APPROVAL_CANCELLED (its turn was ' +
        'cancelled) for a request that no longer waits.',
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
