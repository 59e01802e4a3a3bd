/**
 * Streaming section's baseline: a bare Fastify SSE relay. `POST /v1/stream` asks the provider
 * for a streamed completion with undici and writes each content piece to the client as one SSE
 * frame as soon as it is parsed; nothing is validated beyond the body schema, nothing stored or
 * logged. The least a gateway that streams tokens to browsers can do per delta.
 */
import Fastify from 'fastify'
import { Agent, request as undiciRequest } from 'undici'
import { announceReady, childOptions, serveCommands } from './ipc.js'
import { MODEL, SYSTEM_PROMPT } from './workload.js'

interface Options { providerUrl: string }

interface ChunkShape { choices?: Array<{ delta?: { content?: unknown } }> }

async function main (): Promise<void> {
  const { providerUrl } = childOptions<Options>()
  const dispatcher = new Agent({ connections: 1024, headersTimeout: 30_000, bodyTimeout: 30_000 })
  const app = Fastify({ logger: false })
  app.post('/v1/stream', {
    schema: {
      body: {
        type: 'object',
        properties: { message: { type: 'string', minLength: 1, maxLength: 100_000 } },
        required: ['message'],
        additionalProperties: false
      }
    }
  }, async (request, reply) => {
    const { message } = request.body as { message: string }
    const upstream = await undiciRequest(`${providerUrl}/chat/completions`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ model: MODEL, stream: true, messages: [{ role: 'system', content: SYSTEM_PROMPT }, { role: 'user', content: message }] })
    })
    if (upstream.statusCode !== 200) throw new Error(`provider answered HTTP ${upstream.statusCode}`)
    reply.hijack()
    const raw = reply.raw
    raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    let pending = ''
    for await (const piece of upstream.body) {
      pending += (piece as Buffer).toString('utf8')
      for (let end = pending.indexOf('\n\n'); end !== -1; end = pending.indexOf('\n\n')) {
        const frame = pending.slice(0, end)
        pending = pending.slice(end + 2)
        if (!frame.startsWith('data: ') || frame === 'data: [DONE]') continue
        const content = (JSON.parse(frame.slice(6)) as ChunkShape).choices?.[0]?.delta?.content
        if (typeof content === 'string' && content !== '') raw.write(`data: ${JSON.stringify({ delta: content })}\n\n`)
      }
    }
    raw.end('data: [DONE]\n\n')
  })
  const url = await app.listen({ host: '127.0.0.1', port: 0, backlog: 4096 })
  serveCommands({
    close: async () => {
      await app.close()
      await dispatcher.close()
      return {}
    }
  })
  announceReady({ url })
}

void main()
