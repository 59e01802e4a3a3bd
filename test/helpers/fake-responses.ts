/**
 * A real HTTP server speaking OpenAI's Responses API (POST /v1/responses): streamed answers are
 * the documented semantic events (response.created, output_item.added/done, reasoning summary
 * parts and text deltas, content parts and output_text deltas, function_call_arguments
 * delta/done, response.completed with usage), each with its sequence_number.
 */
import type { ServerResponse } from 'node:http'
import { pieces, startFakeApi, writeEvent, type FakeApi, type Recorded } from './fake-sse-server.js'

export interface ResponsesScript {
  responseId?: string
  /** A reasoning item with this summary (and encrypted_content when the request included it). */
  reasoningSummary?: string
  text?: string
  functionCalls?: Array<{ call_id: string, name: string, arguments: Record<string, unknown> }>
  usage?: { input_tokens: number, output_tokens: number, cached_tokens?: number, reasoning_tokens?: number }
  status?: number
  headers?: Record<string, string>
}

export interface ResponsesBody {
  model: string
  input: Array<Record<string, unknown>>
  instructions?: string
  stream?: boolean
  store?: boolean
  include?: string[]
  previous_response_id?: string
  tools?: Array<Record<string, unknown>>
  [key: string]: unknown
}

export type FakeResponses = FakeApi<ResponsesBody, ResponsesScript>

async function answer (s: ResponsesScript, request: Recorded<ResponsesBody>, res: ServerResponse): Promise<void> {
  if (s.status !== undefined) {
    res.writeHead(s.status, { 'content-type': 'application/json', ...s.headers })
    res.end(JSON.stringify({ error: { message: 'The server is overloaded', type: 'server_error', param: null, code: 'server_error' } }))
    return
  }
  const id = s.responseId ?? 'resp_fake'
  const encrypted = request.body.include?.includes('reasoning.encrypted_content') === true
  const output: Array<Record<string, unknown>> = []
  if (s.reasoningSummary !== undefined) {
    output.push({
      id: `rs_${id}`, type: 'reasoning', summary: [{ type: 'summary_text', text: s.reasoningSummary }],
      ...(encrypted ? { encrypted_content: `gAAAA-encrypted-${id}` } : {})
    })
  }
  if (s.text !== undefined) {
    output.push({
      id: `msg_${id}`, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: s.text, annotations: [] }]
    })
  }
  for (const [i, c] of (s.functionCalls ?? []).entries()) {
    output.push({ id: `fc_${id}_${i}`, type: 'function_call', status: 'completed', call_id: c.call_id, name: c.name, arguments: JSON.stringify(c.arguments) })
  }
  const u = s.usage ?? { input_tokens: 30, output_tokens: 12 }
  const usage = {
    input_tokens: u.input_tokens,
    input_tokens_details: { cached_tokens: u.cached_tokens ?? 0 },
    output_tokens: u.output_tokens,
    output_tokens_details: { reasoning_tokens: u.reasoning_tokens ?? 0 },
    total_tokens: u.input_tokens + u.output_tokens
  }
  const response = { id, object: 'response', created_at: 1741476542, model: 'gpt-fake', output, usage, status: 'completed', incomplete_details: null, error: null }
  if (request.body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(response))
    return
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  let seq = 0
  const send = (type: string, data: Record<string, unknown>): void => { writeEvent(res, type, { type, sequence_number: seq++, ...data }) }
  send('response.created', { response: { ...response, status: 'in_progress', output: [], usage: null } })
  send('response.in_progress', { response: { ...response, status: 'in_progress', output: [], usage: null } })
  for (const [index, item] of output.entries()) {
    const base = { output_index: index, item_id: item.id }
    if (item.type === 'reasoning') {
      const text = s.reasoningSummary ?? ''
      send('response.output_item.added', { output_index: index, item: { id: item.id, type: 'reasoning', summary: [] } })
      send('response.reasoning_summary_part.added', { ...base, summary_index: 0, part: { type: 'summary_text', text: '' } })
      for (const p of pieces(text)) send('response.reasoning_summary_text.delta', { ...base, summary_index: 0, delta: p })
      send('response.reasoning_summary_text.done', { ...base, summary_index: 0, text })
      send('response.reasoning_summary_part.done', { ...base, summary_index: 0, part: { type: 'summary_text', text } })
    } else if (item.type === 'message') {
      const text = s.text ?? ''
      send('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } })
      send('response.content_part.added', { ...base, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } })
      for (const p of pieces(text)) send('response.output_text.delta', { ...base, content_index: 0, delta: p })
      send('response.output_text.done', { ...base, content_index: 0, text })
      send('response.content_part.done', { ...base, content_index: 0, part: { type: 'output_text', text, annotations: [] } })
    } else {
      const args = String(item.arguments)
      send('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' } })
      for (const p of pieces(args, 5)) send('response.function_call_arguments.delta', { ...base, delta: p })
      send('response.function_call_arguments.done', { ...base, arguments: args })
    }
    send('response.output_item.done', { output_index: index, item })
  }
  send('response.completed', { response })
  res.end()
}

export async function startFakeResponses (): Promise<FakeResponses> {
  return await startFakeApi<ResponsesBody, ResponsesScript>('/v1/responses', answer)
}
