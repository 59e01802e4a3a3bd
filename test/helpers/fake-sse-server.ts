/**
 * The HTTP side every fake model API shares: one POST route, requests recorded, a queue of
 * scripted answers, each written by the API's own writer (SSE events or a JSON body).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Socket } from 'node:net'

export interface Recorded<B> {
  headers: IncomingHttpHeaders
  body: B
}

export interface FakeApi<B, S> {
  /** Base URL to configure as `base_url` (ends in /v1). */
  baseUrl: string
  requests: Array<Recorded<B>>
  enqueue (...scripts: S[]): void
  close (): Promise<void>
}

export function sleep (ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Writes one named server-sent event (as Anthropic and the Responses API do: `event:` then `data:`). */
export function writeEvent (res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
}

/** Pieces of `text` of at most `size` characters (streamed deltas). */
export function pieces (text: string, size = 8): string[] {
  return text.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g')) ?? []
}

export async function startFakeApi<B, S> (
  path: string, answer: (script: S, request: Recorded<B>, res: ServerResponse) => Promise<void>
): Promise<FakeApi<B, S>> {
  const queue: S[] = []
  const requests: Array<Recorded<B>> = []
  const sockets = new Set<Socket>()
  const server = createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (c: Buffer) => parts.push(c))
    req.on('end', () => {
      if (req.url !== path || req.method !== 'POST') {
        res.writeHead(404).end()
        return
      }
      const recorded: Recorded<B> = { headers: req.headers, body: JSON.parse(Buffer.concat(parts).toString('utf8')) as B }
      requests.push(recorded)
      const script = queue.shift()
      if (script === undefined) {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'fake api: no scripted answer left' } }))
        return
      }
      answer(script, recorded, res).catch(() => { res.destroy() })
    })
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...scripts) => { queue.push(...scripts) },
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
