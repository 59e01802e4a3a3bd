/**
 * A real HTTP server speaking Anthropic's Messages API (POST /v1/messages): streamed answers are
 * the documented event sequence (message_start, content_block_start/delta/stop with
 * thinking_delta, signature_delta, text_delta and input_json_delta, ping, message_delta with
 * usage, message_stop), refusals the documented error body.
 */
import type { ServerResponse } from 'node:http'
import { pieces, sleep, startFakeApi, writeEvent, type FakeApi } from './fake-sse-server.js'

export interface AnthropicScript {
  thinking?: string
  /** The thinking block's signature (default `sig-<thinking length>`). */
  signature?: string
  /** A redacted_thinking block's data, after the thinking block. */
  redacted?: string
  text?: string
  toolUses?: Array<{ id: string, name: string, input: Record<string, unknown> }>
  usage?: { input_tokens: number, output_tokens: number, cache_creation_input_tokens?: number, cache_read_input_tokens?: number }
  /** Pause between events. */
  eventDelayMs?: number
  /** Answer with this status and Anthropic's error body instead. */
  status?: number
  errorType?: string
  headers?: Record<string, string>
  /** Stream message_start, then an `error` event of this type (as an overloaded API does mid-stream), and end. */
  streamError?: string
}

export interface AnthropicBody {
  model: string
  max_tokens: number
  stream?: boolean
  system?: unknown
  messages: Array<{ role: string, content: unknown }>
  tools?: Array<Record<string, unknown>>
  thinking?: unknown
  [key: string]: unknown
}

export type FakeAnthropic = FakeApi<AnthropicBody, AnthropicScript>

function contentOf (s: AnthropicScript): Array<Record<string, unknown>> {
  const blocks: Array<Record<string, unknown>> = []
  if (s.thinking !== undefined) blocks.push({ type: 'thinking', thinking: s.thinking, signature: s.signature ?? `sig-${s.thinking.length}` })
  if (s.redacted !== undefined) blocks.push({ type: 'redacted_thinking', data: s.redacted })
  if (s.text !== undefined) blocks.push({ type: 'text', text: s.text })
  for (const t of s.toolUses ?? []) blocks.push({ type: 'tool_use', id: t.id, name: t.name, input: t.input })
  return blocks
}

async function answer (s: AnthropicScript, request: { body: AnthropicBody }, res: ServerResponse): Promise<void> {
  if (s.status !== undefined) {
    res.writeHead(s.status, { 'content-type': 'application/json', ...s.headers })
    res.end(JSON.stringify({ type: 'error', error: { type: s.errorType ?? 'overloaded_error', message: 'Overloaded' } }))
    return
  }
  const usage = s.usage ?? { input_tokens: 20, output_tokens: 10 }
  const content = contentOf(s)
  const stopReason = (s.toolUses ?? []).length > 0 ? 'tool_use' : 'end_turn'
  const message = { id: 'msg_fake', type: 'message', role: 'assistant', model: 'claude-fake', stop_sequence: null }
  if (request.body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ ...message, content, stop_reason: stopReason, usage }))
    return
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  const send = async (event: string, data: Record<string, unknown>): Promise<void> => {
    writeEvent(res, event, { type: event, ...data })
    if (s.eventDelayMs !== undefined) await sleep(s.eventDelayMs)
  }
  await send('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } })
  if (s.streamError !== undefined) {
    await send('error', { error: { type: s.streamError, message: 'Overloaded' } })
    res.end()
    return
  }
  for (const [index, block] of content.entries()) {
    if (block.type === 'thinking') {
      await send('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } })
      await send('ping', {})
      for (const p of pieces(String(block.thinking))) await send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: p } })
      await send('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } })
    } else if (block.type === 'redacted_thinking') {
      await send('content_block_start', { index, content_block: block })
    } else if (block.type === 'text') {
      await send('content_block_start', { index, content_block: { type: 'text', text: '' } })
      for (const p of pieces(String(block.text))) await send('content_block_delta', { index, delta: { type: 'text_delta', text: p } })
    } else {
      await send('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } })
      await send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } })
      for (const p of pieces(JSON.stringify(block.input), 5)) await send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } })
    }
    await send('content_block_stop', { index })
  }
  await send('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } })
  await send('message_stop', {})
  res.end()
}

export async function startFakeAnthropic (): Promise<FakeAnthropic> {
  return await startFakeApi<AnthropicBody, AnthropicScript>('/v1/messages', answer)
}
