/** POST /v1/ai-sdk/chat: an AI SDK 6 chat request in, a UI message stream out (src/adapters/ai-sdk.ts translates). */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { AdapterRefusals, AiSdkChatRequest, AiSdkUiMessageStream } from '../schemas/adapters.js'
import { AiSdkTranslator, planChat, UI_MESSAGE_STREAM_HEADERS } from '../src/adapters/ai-sdk.js'
import { findApprovals, waitingClientCalls, resumeTurn, streamNewTurn } from '../src/adapters/stream.js'
import { TollgateError } from '../src/core/errors.js'
import { authenticate, principalOf } from '../src/auth/http.js'

export default async function aiSdkRoutes (app: FastifyInstance): Promise<void> {
  const { auth } = app.gateway
  app.post('/v1/ai-sdk/chat', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: {
      summary: 'Run a turn for an AI SDK chat',
      description: 'The request `DefaultChatTransport` (AI SDK 6) sends → a Tollgate turn streamed as a UI message stream. `id` is the session, ' +
        'the last user message the turn\'s message. An approval request ends the stream (`tool-approval-request`, `finish`) while the ' +
        'turn keeps waiting; the request `addToolApprovalResponse` triggers answers it and streams the rest of the turn. ' +
        'Refusals are problem JSON before the stream starts; a turn that fails after it started ends with an `error` chunk.',
      body: AiSdkChatRequest,
      response: {
        200: {
          description: 'The turn as UI message chunks',
          headers: {
            'x-turn-id': { description: 'The Tollgate turn behind the assistant message', schema: Type.String() },
            'x-vercel-ai-ui-message-stream': { description: 'Always `v1`', schema: Type.String() }
          },
          content: { 'text/event-stream': { schema: AiSdkUiMessageStream } }
        },
        ...AdapterRefusals
      }
    }
  }, async (request, reply) => {
    const principal = principalOf(request)
    const body = request.body as AiSdkChatRequest
    const plan = planChat(body)
    const { gateway } = app
    if (plan.kind === 'start') {
      const stream = { principal, reply, headers: UI_MESSAGE_STREAM_HEADERS, channel: 'ai-sdk', translator: new AiSdkTranslator() }
      await streamNewTurn(gateway, stream, plan.request)
      return
    }
    let answers = plan.kind === 'resume' ? plan.answers : []
    if (plan.kind === 'results') {
      // The message carries every earlier tool output too: only the calls that wait take theirs.
      const waitingCalls = await waitingClientCalls(gateway, principal, body.id)
      answers = plan.results.flatMap((r) => {
        const requestId = waitingCalls.get(r.callId)
        return requestId === undefined ? [] : [{ requestId, decision: 'edit' as const, replacement: r.output }]
      })
      if (answers.length === 0) throw new TollgateError('TOOL_CALL_NOT_WAITING', 'no tool output of the last message is awaited')
    }
    const waiting = await findApprovals(gateway, principal, body.id, answers.map((a) => a.requestId))
    const stream = { principal, reply, headers: UI_MESSAGE_STREAM_HEADERS, channel: 'ai-sdk', translator: new AiSdkTranslator(waiting.callIds) }
    await resumeTurn(gateway, stream, waiting, answers)
  })
}
