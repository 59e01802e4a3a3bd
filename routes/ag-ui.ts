/** POST /v1/ag-ui: AG-UI RunAgentInput in, AG-UI events out (src/adapters/ag-ui.ts does the translating). */
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { AdapterRefusals, AgUiEventStream, AgUiRunInput } from '../schemas/adapters.js'
import { AgUiTranslator, planRun } from '../src/adapters/ag-ui.js'
import { findApprovals, findClientCalls, resumeTurn, streamNewTurn } from '../src/adapters/stream.js'
import { authenticate, principalOf } from '../src/auth/http.js'

export default async function agUiRoutes (app: FastifyInstance): Promise<void> {
  const { auth } = app.gateway
  app.post('/v1/ag-ui', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: {
      summary: 'Run a turn for an AG-UI client',
      description: 'AG-UI 1.0 `RunAgentInput` → a Tollgate turn whose events stream as AG-UI events (SSE). `threadId` is the session, ' +
        'the last user message the turn\'s message. Approval requests end the run with an interrupt outcome (the turn keeps waiting); ' +
        'a run with `resume` answers them and streams the rest of the turn. Refusals are problem JSON before the stream starts; ' +
        'a turn that fails after it started ends the stream with RUN_ERROR.',
      body: AgUiRunInput,
      response: {
        200: {
          description: 'The run\'s AG-UI events',
          headers: { 'x-turn-id': { description: 'The Tollgate turn behind the run', schema: Type.String() } },
          content: { 'text/event-stream': { schema: AgUiEventStream } }
        },
        ...AdapterRefusals
      }
    }
  }, async (request, reply) => {
    const principal = principalOf(request)
    const input = request.body as AgUiRunInput
    const plan = planRun(input)
    const { gateway } = app
    if (plan.kind === 'start') {
      const translator = new AgUiTranslator(input.threadId, input.runId, plan.mode)
      const stream = { principal, reply, headers: {}, channel: 'ag-ui', translator }
      await streamNewTurn(gateway, stream, plan.request)
      return
    }
    const answers = plan.kind === 'resume'
      ? plan.answers
      : (await findClientCalls(gateway, principal, input.threadId, plan.results.map((r) => r.callId)))
          .map((requestId, i) => ({ requestId, decision: 'edit' as const, replacement: plan.results[i]?.output ?? '' }))
    const waiting = await findApprovals(gateway, principal, input.threadId, answers.map((a) => a.requestId))
    const translator = new AgUiTranslator(input.threadId, input.runId, plan.mode, waiting.callIds)
    const stream = { principal, reply, headers: {}, channel: 'ag-ui', translator }
    await resumeTurn(gateway, stream, waiting, answers)
  })
}
