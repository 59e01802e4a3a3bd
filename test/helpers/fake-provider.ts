/**
 * A real HTTP server speaking the OpenAI chat-completions protocol (JSON and SSE streaming),
 * scripted by each test: the network boundary of the gateway, not a stub of its code.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ScriptedCall {
  id?: string
  name: string
  /** An object is JSON-encoded; a string is sent verbatim (to script malformed arguments). */
  arguments?: string | Record<string, unknown>
}

export interface ScriptedReply {
  text?: string
  /** Reasoning sent beside the content, before it (streamed in 8-character pieces like text). */
  reasoning?: string
  /** The delta/message field that carries `reasoning`: DeepSeek's and vLLM's, or OpenRouter's. */
  reasoningField?: 'reasoning_content' | 'reasoning'
  toolCalls?: ScriptedCall[]
  /** Delay before the response starts. */
  delayMs?: number
  /** Hold the response until this settles: lets a test observe a turn while it is running. */
  gate?: Promise<unknown>
  /** Delay between streamed chunks. */
  chunkDelayMs?: number
  /** Answer with this HTTP status and body instead of a completion. */
  status?: number
  errorBody?: string
  /** Extra response headers (e.g. `retry-after` on a 429). */
  headers?: Record<string, string>
  /**
   * Cut the connection (no clean end) after this many streamed chunks: 0 before any response,
   * 1 after the role chunk (headers sent, no text yet), 1 + n after n text pieces of 8 characters.
   */
  resetAfter?: number
  /** End the response cleanly after this many streamed chunks, without finish_reason or [DONE]. */
  endAfter?: number
  /** Send [DONE], then keep the response open with a comment line every 100 ms instead of ending it. */
  openAfterDone?: boolean
  /** Never answer; the request stays open until the client gives up. */
  hang?: boolean
  /** Default { prompt_tokens: 10, completion_tokens: 5 }; null: no usage at all, as from a server that ignores stream_options. */
  usage?: {
    prompt_tokens: number
    completion_tokens: number
    prompt_tokens_details?: { cached_tokens: number }
    completion_tokens_details?: { reasoning_tokens: number }
  } | null
  /** The completion's `id` (default `chatcmpl-fake`) and the answering `model` (default `fake-model`). */
  responseId?: string
  responseModel?: string
}

export type Script = ScriptedReply | ((request: RecordedRequest) => ScriptedReply)

export interface RecordedRequest {
  /** Date.now() when the request arrived. */
  at: number
  headers: IncomingMessage['headers']
  body: {
    model: string
    stream?: boolean
    messages: Array<{
      role: string, content: string | null,
      tool_calls?: Array<{ id: string, function: { name: string, arguments: string } }>, tool_call_id?: string
    }>
    tools?: Array<{ type: string, function: { name: string, description: string, parameters: unknown } }>
    [key: string]: unknown
  }
}

export interface FakeProvider {
  /** Base URL to configure as `base_url` (ends in /v1). */
  baseUrl: string
  requests: RecordedRequest[]
  enqueue (...scripts: Script[]): void
  /** Requests currently being answered (hung or streaming). */
  open (): number
  close (): Promise<void>
}

function sleep (ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

function wireCalls (calls: ScriptedCall[]): Array<{ id: string, type: 'function', function: { name: string, arguments: string } }> {
  return calls.map((c, i) => ({
    id: c.id ?? `call_fake_${i}`,
    type: 'function',
    function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}) }
  }))
}

async function answer (reply: ScriptedReply, stream: boolean, res: ServerResponse, isClosed: () => boolean): Promise<void> {
  if (reply.delayMs !== undefined) await sleep(reply.delayMs)
  if (reply.gate !== undefined) await reply.gate
  if (reply.hang === true) return
  if (reply.resetAfter === 0) {
    res.destroy()
    return
  }
  if (reply.status !== undefined) {
    res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers })
    res.end(reply.errorBody ?? JSON.stringify({ error: { message: 'scripted failure' } }))
    return
  }
  const calls = wireCalls(reply.toolCalls ?? [])
  const finish = calls.length > 0 ? 'tool_calls' : 'stop'
  const usage = reply.usage === null ? undefined : reply.usage ?? { prompt_tokens: 10, completion_tokens: 5 }
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({
      id: reply.responseId ?? 'chatcmpl-fake', object: 'chat.completion', model: reply.responseModel ?? 'fake-model',
      choices: [{
        index: 0,
        finish_reason: finish,
        message: {
          role: 'assistant',
          content: reply.text ?? null,
          ...(reply.reasoning === undefined ? {} : { [reply.reasoningField ?? 'reasoning_content']: reply.reasoning }),
          ...(calls.length > 0 ? { tool_calls: calls } : {})
        }
      }],
      ...(usage === undefined ? {} : { usage })
    }))
    return
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...reply.headers })
  // Like OpenAI's, every chunk names the completion and the model answering.
  const identity = { id: reply.responseId ?? 'chatcmpl-fake', model: reply.responseModel ?? 'fake-model' }
  let written = 0
  // A scripted cut (resetAfter/endAfter) stops the rest of the script, not only a client's close.
  const stopped = (): boolean => isClosed() || res.writableEnded || res.destroyed
  const chunk = async (delta: Record<string, unknown>, finishReason: string | null = null): Promise<void> => {
    if (stopped()) return
    const payload = { ...identity, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finishReason }] }
    const line = `data: ${JSON.stringify(payload)}\n\n`
    written++
    if (written === reply.resetAfter) {
      // Cut only once the chunk left the process, so the client really received it.
      await new Promise<void>((resolve) => res.write(line, () => { resolve() }))
      res.destroy()
      return
    }
    res.write(line)
    if (written === reply.endAfter) {
      res.end()
      return
    }
    if (reply.chunkDelayMs !== undefined) await sleep(reply.chunkDelayMs)
  }
  await chunk({ role: 'assistant' })
  for (const piece of (reply.reasoning ?? '').match(/[\s\S]{1,8}/g) ?? []) await chunk({ content: null, [reply.reasoningField ?? 'reasoning_content']: piece })
  for (const piece of (reply.text ?? '').match(/[\s\S]{1,8}/g) ?? []) await chunk({ content: piece })
  for (const [index, call] of calls.entries()) {
    const args = call.function.arguments
    const half = Math.floor(args.length / 2)
    await chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: args.slice(0, half) } }] })
    await chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] })
  }
  await chunk({}, finish)
  if (!stopped()) {
    if (usage !== undefined) res.write(`data: ${JSON.stringify({ ...identity, object: 'chat.completion.chunk', choices: [], usage })}\n\n`)
    if (reply.openAfterDone !== true) {
      res.end('data: [DONE]\n\n')
      return
    }
    res.write('data: [DONE]\n\n')
    while (!stopped()) {
      await sleep(100)
      if (!stopped()) res.write(': still here\n\n')
    }
  }
}

export async function startFakeProvider (): Promise<FakeProvider> {
  const queue: Script[] = []
  const requests: RecordedRequest[] = []
  const sockets = new Set<import('node:net').Socket>()
  let inFlight = 0
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (c: Buffer) => parts.push(c))
    req.on('end', () => {
      if (req.url !== '/v1/chat/completions' || req.method !== 'POST') {
        res.writeHead(404).end()
        return
      }
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as RecordedRequest['body']
      const recorded: RecordedRequest = { at: Date.now(), headers: req.headers, body }
      requests.push(recorded)
      const script = queue.shift()
      if (script === undefined) {
        res.writeHead(500, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { message: 'fake provider: no scripted reply left' } }))
        return
      }
      const reply = typeof script === 'function' ? script(recorded) : script
      let closed = false
      inFlight++
      res.on('close', () => {
        closed = true
        inFlight--
      })
      answer(reply, body.stream === true, res, () => closed).catch(() => { res.destroy() })
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
    open: () => inFlight,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
