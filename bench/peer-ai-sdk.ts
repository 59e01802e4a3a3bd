/**
 * Peer: what a user could pick instead of Tollgate for the same job, a plain Fastify route on the
 * Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`). The same two no-op tools (zod input
 * schemas, as the SDK's documentation writes them) run through generateText/streamText with
 * stopWhen looping until the final answer; the route answers with the final text and tool calls.
 * For the streaming section, `POST /v1/stream` runs streamText without tools and pipes the UI
 * message stream (SSE) to the client with pipeUIMessageStreamToResponse.
 */
import Fastify from 'fastify'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { generateText, stepCountIs, streamText, tool, type ToolSet } from 'ai'
import { z } from 'zod'
import { announceReady, childOptions, serveCommands } from './ipc.js'
import { MAX_STEPS, MODEL, NOOP_TOOLS, SYSTEM_PROMPT } from './workload.js'

interface Options { providerUrl: string, stream: boolean }

async function main (): Promise<void> {
  const options = childOptions<Options>()
  const provider = createOpenAICompatible({ name: 'fake', baseURL: options.providerUrl, includeUsage: true })
  const model = provider.chatModel(MODEL)
  let toolRuns = 0
  const tools: ToolSet = {}
  for (const t of NOOP_TOOLS) {
    tools[t.name] = tool({
      description: t.description,
      inputSchema: z.object({ n: z.number().int().min(0) }),
      execute: async (args: { n: number }) => {
        toolRuns++
        return t.run(args)
      }
    })
  }

  const app = Fastify({ logger: false })
  app.post('/v1/turns', {
    schema: {
      body: {
        type: 'object',
        properties: { message: { type: 'string', minLength: 1, maxLength: 100_000 } },
        required: ['message'],
        additionalProperties: false
      }
    }
  }, async (request) => {
    const { message } = request.body as { message: string }
    const settings = { model, system: SYSTEM_PROMPT, prompt: message, tools, stopWhen: stepCountIs(MAX_STEPS) }
    if (options.stream) {
      const result = streamText(settings)
      const steps = await result.steps
      return { status: 'completed', final_text: await result.text, tool_calls: steps.flatMap((s) => s.toolCalls.map((c) => ({ name: c.toolName, arguments: c.input }))) }
    }
    const result = await generateText(settings)
    return { status: 'completed', final_text: result.text, tool_calls: result.steps.flatMap((s) => s.toolCalls.map((c) => ({ name: c.toolName, arguments: c.input }))) }
  })
  // Streaming section: the AI SDK's own way to stream an answer to a browser, no tools.
  app.post('/v1/stream', {
    schema: {
      body: {
        type: 'object',
        properties: { message: { type: 'string', minLength: 1, maxLength: 100_000 } },
        required: ['message'],
        additionalProperties: false
      }
    }
  }, (request, reply) => {
    const { message } = request.body as { message: string }
    const result = streamText({ model, system: SYSTEM_PROMPT, prompt: message })
    reply.hijack()
    result.pipeUIMessageStreamToResponse(reply.raw)
  })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })

  serveCommands({
    tools: () => ({ runs: toolRuns }),
    close: async () => {
      await app.close()
      return {}
    }
  })
  announceReady({ url })
}

void main()
