/** POST /v1/ai-sdk/chat: an AI SDK 6 chat request in, a UI message stream out (src/adapters/ai-sdk.ts translates). */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { AdapterRefusals, AiSdkChatRequest, AiSdkUiMessageStream } from '../schemas/adapters.js'
import { AiSdkTranslator, planChat, UI_MESSAGE_STREAM_HEADERS } from '../src/adapters/ai-sdk.js'
import { findApprovals, resumeTurn, streamNewTurn } from '../src/adapters/stream.js'
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
    const waiting = await findApprovals(gateway, principal, body.id, plan.answers.map((a) => a.requestId))
    const stream = { principal, reply, headers: UI_MESSAGE_STREAM_HEADERS, channel: 'ai-sdk', translator: new AiSdkTranslator(waiting.callIds) }
    await resumeTurn(gateway, stream, waiting, plan.answers)
  })
}
