/**
 * Parser section: one streamed answer per provider API, as the API references show the event
 * sequence (the same shapes as the test fakes in test/helpers/fake-anthropic.ts,
 * fake-responses.ts and fake-provider.ts): reasoning, then visible text, then one tool call whose
 * arguments arrive in pieces. The same answer in each API, so each implementation parses the same
 * content; `expectedAnswer` is what a correct reader must end with.
 */

export type WireApi = 'anthropic' | 'responses' | 'chat'

export interface WireShape {
  textDeltas: number
  reasoningDeltas: number
}

export interface ExpectedAnswer {
  text: string
  reasoning: string
  toolName: string
  toolArguments: Record<string, unknown>
}

/** `delta-<i> ` pieces: distinct, so a reader that drops or repeats one ends with the wrong text. */
function pieces (prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${i} `)
}

export function expectedAnswer (shape: WireShape): ExpectedAnswer {
  return {
    text: pieces('t', shape.textDeltas).join(''),
    reasoning: pieces('r', shape.reasoningDeltas).join(''),
    toolName: 'lookup',
    toolArguments: { query: 'the weather in Lisbon', limit: 3, exact: false }
  }
}

/** The arguments JSON in 5-character pieces, as models stream them. */
function argumentPieces (answer: ExpectedAnswer): string[] {
  return JSON.stringify(answer.toolArguments).match(/[\s\S]{1,5}/g) ?? []
}

function sse (event: string | null, data: unknown): string {
  return `${event === null ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`
}

/** Anthropic Messages streaming: message_start, content blocks (thinking with signature, text, tool_use), message_delta, message_stop. */
function anthropicEvents (shape: WireShape): string[] {
  const answer = expectedAnswer(shape)
  const out: string[] = []
  const send = (type: string, data: Record<string, unknown>): void => { out.push(sse(type, { type, ...data })) }
  send('message_start', {
    message: { id: 'msg_bench', type: 'message', role: 'assistant', model: 'claude-bench', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 50, output_tokens: 1 } }
  })
  send('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } })
  send('ping', {})
  for (const p of pieces('r', shape.reasoningDeltas)) send('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: p } })
  send('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' } })
  send('content_block_stop', { index: 0 })
  send('content_block_start', { index: 1, content_block: { type: 'text', text: '' } })
  for (const p of pieces('t', shape.textDeltas)) send('content_block_delta', { index: 1, delta: { type: 'text_delta', text: p } })
  send('content_block_stop', { index: 1 })
  send('content_block_start', { index: 2, content_block: { type: 'tool_use', id: 'toolu_bench', name: answer.toolName, input: {} } })
  send('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '' } })
  for (const p of argumentPieces(answer)) send('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: p } })
  send('content_block_stop', { index: 2 })
  send('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: shape.textDeltas + shape.reasoningDeltas } })
  send('message_stop', {})
  return out
}

/** OpenAI Responses streaming: a reasoning item with a summary, a message item, a function_call item, response.completed. */
function responsesEvents (shape: WireShape): string[] {
  const answer = expectedAnswer(shape)
  const out: string[] = []
  let seq = 0
  const send = (type: string, data: Record<string, unknown>): void => { out.push(sse(type, { type, sequence_number: seq++, ...data })) }
  const reasoning = answer.reasoning
  const args = JSON.stringify(answer.toolArguments)
  const items = [
    { id: 'rs_bench', type: 'reasoning', summary: [{ type: 'summary_text', text: reasoning }] },
    { id: 'msg_bench', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: answer.text, annotations: [] }] },
    { id: 'fc_bench', type: 'function_call', status: 'completed', call_id: 'call_bench', name: answer.toolName, arguments: args }
  ]
  const usage = {
    input_tokens: 50,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: shape.textDeltas,
    output_tokens_details: { reasoning_tokens: shape.reasoningDeltas },
    total_tokens: 50 + shape.textDeltas
  }
  const response = { id: 'resp_bench', object: 'response', created_at: 1741476542, model: 'gpt-bench', output: items, usage, status: 'completed', incomplete_details: null, error: null }
  send('response.created', { response: { ...response, status: 'in_progress', output: [], usage: null } })
  send('response.in_progress', { response: { ...response, status: 'in_progress', output: [], usage: null } })
  send('response.output_item.added', { output_index: 0, item: { id: 'rs_bench', type: 'reasoning', summary: [] } })
  const r = { item_id: 'rs_bench', output_index: 0 }
  send('response.reasoning_summary_part.added', { ...r, summary_index: 0, part: { type: 'summary_text', text: '' } })
  for (const p of pieces('r', shape.reasoningDeltas)) send('response.reasoning_summary_text.delta', { ...r, summary_index: 0, delta: p })
  send('response.reasoning_summary_text.done', { ...r, summary_index: 0, text: reasoning })
  send('response.reasoning_summary_part.done', { ...r, summary_index: 0, part: { type: 'summary_text', text: reasoning } })
  send('response.output_item.done', { output_index: 0, item: items[0] })
  const m = { item_id: 'msg_bench', output_index: 1 }
  send('response.output_item.added', { output_index: 1, item: { ...items[1], status: 'in_progress', content: [] } })
  send('response.content_part.added', { ...m, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } })
  for (const p of pieces('t', shape.textDeltas)) send('response.output_text.delta', { ...m, content_index: 0, delta: p })
  send('response.output_text.done', { ...m, content_index: 0, text: answer.text })
  send('response.content_part.done', { ...m, content_index: 0, part: { type: 'output_text', text: answer.text, annotations: [] } })
  send('response.output_item.done', { output_index: 1, item: items[1] })
  const f = { item_id: 'fc_bench', output_index: 2 }
  send('response.output_item.added', { output_index: 2, item: { ...items[2], status: 'in_progress', arguments: '' } })
  for (const p of argumentPieces(answer)) send('response.function_call_arguments.delta', { ...f, delta: p })
  send('response.function_call_arguments.done', { ...f, arguments: args })
  send('response.output_item.done', { output_index: 2, item: items[2] })
  send('response.completed', { response })
  return out
}

/**
 * Chat completions streaming: `reasoning_content` pieces, content pieces, one tool call's argument
 * pieces, the finish and usage chunks, `[DONE]`.
 */
function chatEvents (shape: WireShape): string[] {
  const answer = expectedAnswer(shape)
  const out: string[] = []
  const chunk = (delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}): void => {
    const choices = [{ index: 0, delta, finish_reason: finish }]
    out.push(sse(null, { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: 'gpt-bench', choices, ...extra }))
  }
  chunk({ role: 'assistant', content: '' }, null)
  for (const p of pieces('r', shape.reasoningDeltas)) chunk({ content: null, reasoning_content: p }, null)
  for (const p of pieces('t', shape.textDeltas)) chunk({ content: p }, null)
  chunk({ tool_calls: [{ index: 0, id: 'call_bench', type: 'function', function: { name: answer.toolName, arguments: '' } }] }, null)
  for (const p of argumentPieces(answer)) chunk({ tool_calls: [{ index: 0, function: { arguments: p } }] }, null)
  chunk({}, 'tool_calls')
  out.push(sse(null, { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: 'gpt-bench', choices: [], usage: { prompt_tokens: 50, completion_tokens: shape.textDeltas, total_tokens: 50 + shape.textDeltas } }))
  out.push('data: [DONE]\n\n')
  return out
}

/** The SSE frames of one answer, in order; the server writes one frame per write, as providers send them. */
export function wireEvents (api: WireApi, shape: WireShape): string[] {
  switch (api) {
    case 'anthropic': return anthropicEvents(shape)
    case 'responses': return responsesEvents(shape)
    case 'chat': return chatEvents(shape)
  }
}

export const WIRE_PATHS: Record<WireApi, string> = {
  anthropic: '/v1/messages',
  responses: '/v1/responses',
  chat: '/v1/chat/completions'
}
