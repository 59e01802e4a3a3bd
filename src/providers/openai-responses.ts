/**
 * OpenAI Responses API provider (`kind = "openai-responses"`): POST {base_url}/responses with
 * function tools in the Responses shape, tool results as `function_call_output` items with the
 * model's `call_id`, reasoning summaries streamed as reasoning. The output items of an answer are
 * kept as the message's provider state, so its reasoning reaches the next call: by default
 * (`reasoning_carry = "encrypted_content"`) with `store: false`, the items sent back whole with
 * their encrypted reasoning; or (`"previous_response_id"`) by naming the stored response and
 * sending only what came after it.
 */
import type { Dispatcher } from 'undici'
import type { ProviderConfig } from '../../schemas/config.js'
import { scrubText } from '../core/security/redact.js'
import type { ToolSpec } from '../tools/contract.js'
import { ProviderHttp, tokenCount } from './http-call.js'
import { parseRetryAfter } from './retry.js'
import {
  ProviderError, type ChatCallOptions, type ChatMessage, type ChatRequest, type ChatResponse, type ChatUsage, type ModelProvider,
  type ProviderEndpoint
} from './types.js'

export const RESPONSES_KIND = 'openai-responses'
const DEFAULT_BASE_URL = 'https://api.openai.com/v1'

type Item = Record<string, unknown> & { type?: string }

/** What an answer leaves for the next call. */
interface ResponsesState {
  response_id: string | null
  items: Item[]
}

interface WireUsage {
  input_tokens?: unknown
  output_tokens?: unknown
  input_tokens_details?: { cached_tokens?: unknown }
  output_tokens_details?: { reasoning_tokens?: unknown }
}

/** Failure codes of a response whose retry may succeed. */
const RETRYABLE_CODES = new Set(['server_error', 'rate_limit_exceeded'])

function keptState (m: ChatMessage): ResponsesState | null {
  if (m.provider_state?.kind !== RESPONSES_KIND) return null
  const data = m.provider_state.data as Partial<ResponsesState> | null
  return Array.isArray(data?.items) ? { response_id: typeof data.response_id === 'string' ? data.response_id : null, items: data.items } : null
}

function messageItems (m: ChatMessage): Item[] {
  if (m.role === 'tool') return [{ type: 'function_call_output', call_id: m.tool_call_id ?? '', output: m.content ?? '' }]
  if (m.role === 'user') return [{ role: 'user', content: m.content ?? '' }]
  if (m.role !== 'assistant') return []
  const kept = keptState(m)
  if (kept !== null) return kept.items
  const items: Item[] = m.content === null || m.content === '' ? [] : [{ role: 'assistant', content: m.content }]
  for (const c of m.tool_calls ?? []) items.push({ type: 'function_call', call_id: c.id, name: c.name, arguments: c.arguments })
  return items
}

/**
 * The request's `instructions` and `input`; with `chain`, the id of the last answer this provider
 * stored and only the items after it (the provider has the rest).
 */
export function toResponsesInput (
  history: readonly ChatMessage[], chain: boolean
): { instructions: string, input: Item[], previous?: string } {
  const system = history.filter((m) => m.role === 'system' && m.content !== null && m.content !== '').map((m) => m.content).join('\n\n')
  let from = 0
  let previous: string | undefined
  if (chain) {
    for (let i = history.length - 1; i >= 0; i--) {
      const m = history[i]
      const id = m === undefined ? null : keptState(m)?.response_id ?? null
      if (id !== null) {
        previous = id
        from = i + 1
        break
      }
    }
  }
  const input = history.slice(from).flatMap(messageItems)
  return { instructions: system, input, ...(previous === undefined ? {} : { previous }) }
}

function readUsage (usage: WireUsage | undefined): ChatUsage | undefined {
  if (usage === undefined || usage === null || typeof usage !== 'object') return undefined
  const input = tokenCount(usage.input_tokens)
  const output = tokenCount(usage.output_tokens)
  if (input === null || output === null) return undefined
  const result: ChatUsage = { input_tokens: input, output_tokens: output }
  const cached = tokenCount(usage.input_tokens_details?.cached_tokens)
  if (cached !== null) result.cache_read_tokens = cached
  const reasoning = tokenCount(usage.output_tokens_details?.reasoning_tokens)
  if (reasoning !== null) result.reasoning_tokens = reasoning
  return result
}

/** Text, tool calls, reasoning summaries and state of an answer's output items. */
function answerOf (output: readonly Item[], responseId: string | null): ChatResponse {
  let text = ''
  let reasoning = ''
  const toolCalls: ChatResponse['toolCalls'] = []
  output.forEach((item, i) => {
    if (item.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content as Item[]) if (part.type === 'output_text' && typeof part.text === 'string') text += part.text
    } else if (item.type === 'function_call') {
      toolCalls.push({ id: String(item.call_id ?? `call_${i}`), name: String(item.name ?? ''), arguments: String(item.arguments ?? '') })
    } else if (item.type === 'reasoning' && Array.isArray(item.summary)) {
      for (const part of item.summary as Item[]) if (typeof part.text === 'string') reasoning += part.text
    }
  })
  const state: ResponsesState = { response_id: responseId, items: [...output] }
  const response: ChatResponse = { text, toolCalls, providerState: { kind: RESPONSES_KIND, data: state } }
  if (reasoning !== '') response.reasoning = reasoning
  return response
}

function failed (body: Record<string, unknown>): ProviderError {
  const error = (body.error ?? {}) as { code?: unknown, message?: unknown }
  const code = typeof error.code === 'string' ? error.code : 'error'
  const message = `provider error: ${code}: ${scrubText(typeof error.message === 'string' ? error.message : 'unknown')}`
  return RETRYABLE_CODES.has(code)
    ? new ProviderError('PROVIDER_UNAVAILABLE', message, { retryable: true })
    : new ProviderError('PROVIDER_ERROR', message)
}

function identify (response: ChatResponse, body: Record<string, unknown>): ChatResponse {
  if (typeof body.id === 'string' && body.id !== '') response.id = body.id
  if (typeof body.model === 'string' && body.model !== '') response.model = body.model
  const usage = readUsage(body.usage as WireUsage | undefined)
  if (usage !== undefined) response.usage = usage
  const incomplete = (body.incomplete_details ?? null) as { reason?: unknown } | null
  response.finishReason = typeof incomplete?.reason === 'string' ? incomplete.reason : String(body.status ?? 'completed')
  return response
}

export interface ResponsesProviderOptions {
  name: string
  config: ProviderConfig
  apiKey: string | undefined
}

export class ResponsesProvider implements ModelProvider {
  readonly name: string
  readonly kind = RESPONSES_KIND
  readonly nativeTools: boolean
  readonly endpoint: ProviderEndpoint | undefined
  private readonly config: ProviderConfig
  private readonly apiKey: string | undefined
  private readonly http: ProviderHttp
  private readonly wireTools = new WeakMap<ToolSpec, Item>()

  constructor (options: ResponsesProviderOptions) {
    this.name = options.name
    this.config = options.config
    this.apiKey = options.apiKey
    this.nativeTools = options.config.native_tools
    const base = options.config.base_url ?? DEFAULT_BASE_URL
    this.http = new ProviderHttp(options.config, `${base.replace(/\/+$/, '')}/responses`)
    this.endpoint = this.http.endpoint
  }

  private wireTool (spec: ToolSpec): Item {
    let wire = this.wireTools.get(spec)
    if (wire === undefined) {
      // strict: false, since strict mode would demand every property be required.
      wire = { type: 'function', name: spec.name, description: spec.description, parameters: spec.parameters, strict: false }
      this.wireTools.set(spec, wire)
    }
    return wire
  }

  payload (req: ChatRequest): string {
    const { config } = this
    const chain = config.reasoning_carry === 'previous_response_id'
    const { instructions, input, previous } = toResponsesInput(req.messages, chain)
    const payload: Record<string, unknown> = { model: req.model, input, stream: config.stream }
    if (instructions !== '') payload.instructions = instructions
    if (chain) {
      if (previous !== undefined) payload.previous_response_id = previous
    } else {
      payload.store = false
      payload.include = ['reasoning.encrypted_content']
    }
    if (req.tools !== undefined && req.tools.length > 0) payload.tools = req.tools.map((s) => this.wireTool(s))
    const reasoning: Record<string, string> = {}
    if (config.reasoning_effort !== undefined) reasoning.effort = config.reasoning_effort
    if (config.reasoning_summary !== undefined) reasoning.summary = config.reasoning_summary
    if (Object.keys(reasoning).length > 0) payload.reasoning = reasoning
    if (config.max_tokens !== undefined) payload.max_output_tokens = config.max_tokens
    const temperature = req.temperature ?? config.temperature
    if (temperature !== undefined) payload.temperature = temperature
    return JSON.stringify(payload)
  }

  private headers (): Record<string, string> {
    const headers: Record<string, string> = {
      ...this.config.headers,
      'content-type': 'application/json',
      accept: this.config.stream ? 'text/event-stream' : 'application/json'
    }
    if (this.apiKey !== undefined && this.apiKey !== '') headers.authorization = `Bearer ${this.apiKey}`
    return headers
  }

  async chat (req: ChatRequest, options: ChatCallOptions): Promise<ChatResponse> {
    return await this.http.call(this.payload(req), this.headers(), options, async (res, attempt) => await this.read(res, attempt), refusal)
  }

  private async read (res: Dispatcher.ResponseData, options: ChatCallOptions): Promise<ChatResponse> {
    const contentType = String(res.headers['content-type'] ?? '')
    if (this.config.stream && contentType.includes('text/event-stream')) return await this.readStream(res, options)
    const body = await this.http.readJson<Record<string, unknown>>(res.body, options.signal)
    if (body.error != null || body.status === 'failed') throw failed(body)
    if (!Array.isArray(body.output)) throw new ProviderError('PROVIDER_BAD_RESPONSE', 'provider response has no output array')
    return identify(answerOf(body.output as Item[], typeof body.id === 'string' ? body.id : null), body)
  }

  private async readStream (res: Dispatcher.ResponseData, options: ChatCallOptions): Promise<ChatResponse> {
    const items: Item[] = []
    // Set by the terminal event; a holder, since a callback's assignment is invisible to narrowing.
    const final: { response: Record<string, unknown> | null } = { response: null }
    await this.http.readEvents(res.body, options.signal, (_event, data) => {
      switch (data.type) {
        case 'response.output_text.delta':
          if (typeof data.delta === 'string' && data.delta !== '') options.onTextDelta?.(data.delta)
          break
        case 'response.reasoning_summary_text.delta':
          if (typeof data.delta === 'string' && data.delta !== '') options.onReasoningDelta?.(data.delta)
          break
        case 'response.output_item.done':
          if (typeof data.item === 'object' && data.item !== null) items[Number(data.output_index ?? items.length)] = data.item as Item
          break
        case 'response.completed':
        case 'response.incomplete':
          final.response = (data.response ?? {}) as Record<string, unknown>
          break
        case 'response.failed':
          throw failed((data.response ?? {}) as Record<string, unknown>)
        case 'error':
          throw failed({ error: data })
      }
    })
    // A connection cut mid-stream can look like a clean end; a whole answer ends with response.completed.
    const body = final.response
    if (body === null) throw new ProviderError('PROVIDER_UNAVAILABLE', 'provider stream ended before response.completed', { retryable: true })
    // The final response lists the whole output; the items streamed one by one stand in if it does not.
    const output = Array.isArray(body.output) && body.output.length > 0 ? body.output as Item[] : items.filter((i) => i !== undefined)
    const response = identify(answerOf(output, typeof body.id === 'string' ? body.id : null), body)
    // Its summaries went out as they streamed.
    delete response.reasoning
    return response
  }

  async close (): Promise<void> {
    await this.http.close()
  }
}

/** A refused request: OpenAI's `{error: {message, type, code}}`, its status and Retry-After. */
function refusal (status: number, headers: Dispatcher.ResponseData['headers'], body: string): ProviderError {
  let detail = scrubText(body).slice(0, 500)
  try {
    const json = JSON.parse(body) as { error?: { message?: unknown, type?: unknown, code?: unknown } }
    if (json.error !== undefined) {
      const kind = typeof json.error.code === 'string' ? json.error.code : String(json.error.type ?? 'error')
      detail = `${kind}: ${scrubText(String(json.error.message ?? '')).slice(0, 500)}`
    }
  } catch {}
  return new ProviderError('PROVIDER_ERROR', `provider answered HTTP ${status}: ${detail}`, {
    status, retryable: status === 429 || status >= 500, retryAfterMs: parseRetryAfter(headers['retry-after'])
  })
}
