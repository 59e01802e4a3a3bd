/**
 * Parser section's provider: answers POST on the three API paths of provider-wire.ts with that
 * API's streamed answer, one SSE frame per socket write, yielding to the event loop between
 * frames so each frame leaves as its own write (as a provider streaming tokens sends them) and
 * readers parse frames, not one large buffer. No delay otherwise: what is measured is the
 * reader's CPU, not waiting.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { announceReady, childOptions, serveCommands } from './ipc.js'
import { WIRE_PATHS, wireEvents, type WireApi, type WireShape } from './provider-wire.js'

async function drain (req: IncomingMessage): Promise<void> {
  for await (const piece of req) void piece
}

async function answer (events: readonly string[], res: ServerResponse): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  for (const frame of events) {
    res.write(frame)
    await yieldToLoop()
  }
  res.end()
}

async function main (): Promise<void> {
  const shape = childOptions<WireShape>()
  const byPath = new Map<string, string[]>()
  for (const api of Object.keys(WIRE_PATHS) as WireApi[]) byPath.set(WIRE_PATHS[api], wireEvents(api, shape))
  let answered = 0
  const server = createServer((req, res) => {
    const events = req.method === 'POST' ? byPath.get(req.url ?? '') : undefined
    void drain(req).then(async () => {
      if (events === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' })
        res.end('{"error":{"type":"not_found_error","message":"no such path"}}')
        return
      }
      answered++
      await answer(events, res)
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('wire server has no port')
  serveCommands({ answered: () => ({ answered }) })
  announceReady({ baseUrl: `http://127.0.0.1:${address.port}` })
}

void main()
