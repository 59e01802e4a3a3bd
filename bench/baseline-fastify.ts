/**
 * Baseline: a bare Fastify 5 route `POST /turn` running the bare turn (bare-turn.ts) — the same
 * provider calls and tool calls as every other runner, behind the same HTTP hop and load driver
 * as Tollgate, with nothing else (no events, no persistence, no policy). It answers with the final
 * text and the tool calls.
 */
import Fastify from 'fastify'
import { announceReady, childOptions, serveCommands } from './ipc.js'
import { createBareTurns } from './bare-turn.js'

interface Options { providerUrl: string, stream: boolean }

async function main (): Promise<void> {
  const bare = createBareTurns(childOptions<Options>())
  const app = Fastify({ logger: false })
  app.post('/turn', {
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
    const result = await bare.run(message)
    return { status: 'completed', final_text: result.finalText, tool_calls: result.toolCalls }
  })
  const url = await app.listen({ host: '127.0.0.1', port: 0, backlog: 4096 })
  serveCommands({
    tools: () => ({ runs: bare.toolRuns }),
    close: async () => {
      await app.close()
      await bare.close()
      return {}
    }
  })
  announceReady({ url })
}

void main()
