/**
 * Zero-latency OpenAI-compatible provider, run as its own process so its work does not count
 * against any runner. It answers from the request alone: while the conversation has no tool
 * result yet it asks for the tool calls the user message names (`calls:<n>`, two by default;
 * none: the final text at once), afterwards it gives the final text. JSON or SSE, following the
 * request's `stream`. A first call whose user message starts with `hold:` waits for the
 * orchestrator's `release` (fan-out subscribers attach to a running turn; cancels hit one).
 */
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { announceReady, monotonicNs, serveCommands } from './ipc.js'
import { callsAskedBy, encodeSendTime, FINAL_TEXT, HOLD_PREFIX, MODEL, scriptedCalls, streamAskedBy, type ScriptedCall } from './workload.js'

const MAX_BODY_BYTES = 1_048_576

interface WireMessage { role?: string, content?: unknown }
interface Holds { waiters: Map<string, { promise: Promise<void>, release: () => void }> }

function hold (holds: Holds, key: string): { promise: Promise<void>, release: () => void } {
  let entry = holds.waiters.get(key)
  if (entry === undefined) {
    let release = (): void => {}
    const promise = new Promise<void>((resolve) => { release = resolve })
    entry = { promise, release }
    holds.waiters.set(key, entry)
  }
  return entry
}

/** One `chat.completion.chunk` SSE frame, the shape the OpenAI API reference shows for `stream: true`. */
function chunk (delta: Record<string, unknown>, finishReason: string | null, extra: Record<string, unknown> = {}): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: MODEL, choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`
}

/** The closing frames of a stream: the finish reason, the usage chunk (empty `choices`), `[DONE]`. */
function streamEnd (finish: string, completionTokens: number): string {
  const usage = { prompt_tokens: 40, completion_tokens: completionTokens, total_tokens: 40 + completionTokens }
  return `${chunk({}, finish)}data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: MODEL, choices: [], usage })}\n\ndata: [DONE]\n\n`
}

/**
 * Streaming section: `tokens` content chunks, one every `intervalMs`, each carrying its own send
 * time (encodeSendTime, read from the clock just before the write) as its text.
 */
function streamTokens (res: ServerResponse, tokens: number, intervalMs: number): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  res.write(chunk({ role: 'assistant', content: '' }, null))
  let sent = 0
  const tick = (): void => {
    if (res.destroyed) return
    if (sent === tokens) {
      res.end(streamEnd('stop', tokens))
      return
    }
    sent++
    res.write(chunk({ content: encodeSendTime(monotonicNs()) }, null))
    setTimeout(tick, intervalMs)
  }
  setTimeout(tick, intervalMs)
}

function reply (res: ServerResponse, stream: boolean, scripted: ReadonlyArray<ScriptedCall & { id: string }>): void {
  const calls = scripted.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: JSON.stringify(c.arguments) } }))
  const finish = calls.length > 0 ? 'tool_calls' : 'stop'
  const text = calls.length > 0 ? null : FINAL_TEXT
  const usage = { prompt_tokens: 40, completion_tokens: 8, total_tokens: 48 }
  if (!stream) {
    const body = JSON.stringify({
      id: 'chatcmpl-bench',
      object: 'chat.completion',
      created: 0,
      model: MODEL,
      choices: [{ index: 0, finish_reason: finish, message: { role: 'assistant', content: text, ...(calls.length > 0 ? { tool_calls: calls } : {}) } }],
      usage
    })
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    res.end(body)
    return
  }
  let out = chunk({ role: 'assistant', content: text ?? '' }, null)
  calls.forEach((c, index) => { out += chunk({ tool_calls: [{ index, ...c }] }, null) })
  out += streamEnd(finish, 8)
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  res.end(out)
}

async function main (): Promise<void> {
  const holds: Holds = { waiters: new Map() }
  const sockets = new Set<Socket>()
  let requests = 0
  let nextCall = 0
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404).end()
      return
    }
    const parts: Buffer[] = []
    let size = 0
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413).end()
        req.destroy()
        return
      }
      parts.push(c)
    })
    req.on('end', () => {
      if (res.writableEnded) return
      requests++
      let body: { stream?: boolean, messages?: WireMessage[] }
      try {
        body = JSON.parse(Buffer.concat(parts).toString('utf8')) as typeof body
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"invalid JSON"}}')
        return
      }
      const messages = Array.isArray(body.messages) ? body.messages : []
      const stream = body.stream === true
      if (messages.some((m) => m.role === 'tool')) {
        reply(res, stream, [])
        return
      }
      const user = messages.findLast((m) => m.role === 'user')
      const content = typeof user?.content === 'string' ? user.content : ''
      const streamed = streamAskedBy(content)
      if (streamed !== null) {
        streamTokens(res, streamed.tokens, streamed.intervalMs)
        return
      }
      const calls = scriptedCalls(callsAskedBy(content)).map((c) => ({ ...c, id: `call_${(nextCall++).toString(36)}` }))
      if (!content.startsWith(HOLD_PREFIX)) {
        reply(res, stream, calls)
        return
      }
      void hold(holds, content).promise.then(() => { if (!res.destroyed) reply(res, stream, calls) })
    })
  })
  server.keepAliveTimeout = 60_000
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  serveCommands({
    stats: () => ({ requests }),
    release: (m) => {
      // Kept after release: the held request may arrive after the release. Keys are one per held turn.
      hold(holds, String(m.key)).release()
      return {}
    },
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      return {}
    }
  })
  announceReady({ baseUrl: `http://127.0.0.1:${port}/v1` })
}

void main()
