/**
 * OpenAI-compatible chat-completions provider over undici, streaming (SSE) or not, retrying
 * connection failures, 429 and 5xx before anything was streamed. Timeouts and response sizes are
 * bounded: undici's 300 s defaults do not fit a gateway.
 */
import type { Readable } from 'node:stream'
import type { Dispatcher } from 'undici'
import type { ProviderConfig } from '../../schemas/config.js'
import { scrubText } from '../core/security/redact.js'
import type { ToolSpec } from '../tools/contract.js'
import { ProviderHttp, tokenCount } from './http-call.js'
import { parseRetryAfter } from './retry.js'
import { SseParser } from './sse.js'
import {
  ProviderError, type ChatCallOptions, type ChatMessage, type ChatRequest, type ChatResponse,
  type ChatToolCall, type ModelProvider, type ProviderEndpoint, type ChatUsage
} from './types.js'

/** How long a streamed answer that sent [DONE] may keep its response open before it is cut off. */
const DONE_DRAIN_MS = 250

interface WireToolCallDelta {
  index?: number
  id?: string
  function?: { name?: string, arguments?: string }
}

interface WireChoice {
  message?: {
    content?: string | null
    reasoning_content?: unknown
    reasoning?: unknown
    tool_calls?: Array<{ id?: string, function?: { name?: string, arguments?: string } }>
  }
  delta?: { content?: string | null, reasoning_content?: unknown, reasoning?: unknown, tool_calls?: WireToolCallDelta[] }
  finish_reason?: string | null
}

interface WireChunk {
  id?: string
  model?: string
  choices?: WireChoice[]
  usage?: {
    prompt_tokens?: unknown
    completion_tokens?: unknown
    prompt_tokens_details?: { cached_tokens?: unknown } | null
    completion_tokens_details?: { reasoning_tokens?: unknown } | null
  } | null
  error?: { message?: string }
}

/**
 * Reasoning the server sent beside the content: `reasoning_content` (DeepSeek, vLLM) or
 * `reasoning` (OpenRouter, Ollama), a string either way; anything else is not reasoning text.
 */
function reasoningOf (part: { reasoning_content?: unknown, reasoning?: unknown }): string {
  if (typeof part.reasoning_content === 'string') return part.reasoning_content
  return typeof part.reasoning === 'string' ? part.reasoning : ''
}

/** Usage only when both counts are real: a half-reported or malformed usage is no usage, never a zero. */
function readUsage (usage: WireChunk['usage']): ChatUsage | undefined {
  if (usage == null || typeof usage !== 'object') return undefined
  const input = tokenCount(usage.prompt_tokens)
  const output = tokenCount(usage.completion_tokens)
  if (input === null || output === null) return undefined
  const result: ChatUsage = { input_tokens: input, output_tokens: output }
  // The details OpenAI (and servers copying it) report: cached prompt tokens, reasoning tokens.
  const cached = tokenCount(usage.prompt_tokens_details?.cached_tokens)
  if (cached !== null) result.cache_read_tokens = cached
  const reasoning = tokenCount(usage.completion_tokens_details?.reasoning_tokens)
  if (reasoning !== null) result.reasoning_tokens = reasoning
  return result
}

function toWireMessage (m: ChatMessage): Record<string, unknown> {
  if (m.role === 'assistant' && m.tool_calls !== undefined && m.tool_calls.length > 0) {
    return {
      role: 'assistant',
      content: m.content,
      tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }))
    }
  }
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.tool_call_id, content: m.content ?? '' }
  return { role: m.role, content: m.content ?? '' }
}

/** The completion's id and answering model, from the body or the first chunk that names them. */
function identify (response: ChatResponse, chunk: WireChunk): void {
  if (response.id === undefined && typeof chunk.id === 'string' && chunk.id !== '') response.id = chunk.id
  if (response.model === undefined && typeof chunk.model === 'string' && chunk.model !== '') response.model = chunk.model
}

/** A refused request: 429 and 5xx may be tried again, after the server's retry-after when it gives one. */
function refusal (status: number, headers: Dispatcher.ResponseData['headers'], text: string): ProviderError {
  return new ProviderError('PROVIDER_ERROR', `provider answered HTTP ${status}: ${scrubText(text).slice(0, 500)}`, {
    status,
    retryable: status === 429 || status >= 500,
    retryAfterMs: parseRetryAfter(headers['retry-after'])
  })
}

export interface OpenAIProviderOptions {
  name: string
  config: ProviderConfig
  apiKey: string | undefined
}

export class OpenAIProvider implements ModelProvider {
  readonly name: string
  readonly kind = 'openai'
  readonly nativeTools: boolean
  readonly endpoint: ProviderEndpoint | undefined
  private readonly config: ProviderConfig
  private readonly apiKey: string | undefined
  private readonly http: ProviderHttp
  /** Wire form (JSON text) of each shared spec, made once per spec object rather than once per request. */
  private readonly wireTools = new WeakMap<ToolSpec, string>()

  constructor (options: OpenAIProviderOptions) {
    this.name = options.name
    this.config = options.config
    this.apiKey = options.apiKey
    this.nativeTools = options.config.native_tools
    this.http = new ProviderHttp(options.config, `${(options.config.base_url ?? '').replace(/\/+$/, '')}/chat/completions`)
    this.endpoint = this.http.endpoint
  }

  /** A tool's wire form as JSON text, made once per spec (specs are frozen, their schemas compiled once). */
  private wireTool (spec: ToolSpec): string {
    let wire = this.wireTools.get(spec)
    if (wire === undefined) {
      wire = JSON.stringify({ type: 'function', function: spec })
      this.wireTools.set(spec, wire)
    }
    return wire
  }

  private payload (req: ChatRequest): string {
    const stream = this.config.stream
    const payload: Record<string, unknown> = {
      model: req.model,
      messages: req.messages.map(toWireMessage),
      stream
    }
    // Usage arrives in one last chunk; a server that ignores the option simply sends none.
    if (stream && this.config.stream_usage) payload.stream_options = { include_usage: true }
    const temperature = req.temperature ?? this.config.temperature
    if (temperature !== undefined) payload.temperature = temperature
    if (this.config.max_tokens !== undefined) payload.max_tokens = this.config.max_tokens
    const json = JSON.stringify(payload)
    if (req.tools === undefined || req.tools.length === 0) return json
    // The tool schemas are the bulk of a request and the same every call: spliced in as made once.
    return `${json.slice(0, -1)},"tools":[${req.tools.map((s) => this.wireTool(s)).join(',')}]}`
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

  /** One model call, with the attempts, retries and deadline every HTTP provider kind shares (http-call.ts). */
  async chat (req: ChatRequest, options: ChatCallOptions): Promise<ChatResponse> {
    return await this.http.call(this.payload(req), this.headers(), options, this.readAnswer, refusal)
  }

  private readonly readAnswer = async (res: Dispatcher.ResponseData, options: ChatCallOptions): Promise<ChatResponse> => {
    const contentType = String(res.headers['content-type'] ?? '')
    if (this.config.stream && contentType.includes('text/event-stream')) return await this.readStream(res.body, options)
    const text = await this.http.readText(res.body, this.config.max_response_bytes, options.signal)
    return this.parseCompletion(text)
  }

  private parseCompletion (text: string): ChatResponse {
    let json: WireChunk
    try {
      json = JSON.parse(text) as WireChunk
    } catch {
      throw new ProviderError('PROVIDER_BAD_RESPONSE', 'provider response is not valid JSON')
    }
    if (json.error !== undefined) throw new ProviderError('PROVIDER_ERROR', `provider error: ${scrubText(json.error.message ?? 'unknown')}`)
    const choice = json.choices?.[0]
    if (choice?.message === undefined) throw new ProviderError('PROVIDER_BAD_RESPONSE', 'provider response has no choices[0].message')
    const toolCalls: ChatToolCall[] = (choice.message.tool_calls ?? []).map((c, i) => ({
      id: c.id ?? `call_${i}`,
      name: c.function?.name ?? '',
      arguments: c.function?.arguments ?? ''
    }))
    const response: ChatResponse = { text: choice.message.content ?? '', toolCalls }
    const reasoning = reasoningOf(choice.message)
    if (reasoning !== '') response.reasoning = reasoning
    identify(response, json)
    if (choice.finish_reason != null) response.finishReason = choice.finish_reason
    const usage = readUsage(json.usage)
    if (usage !== undefined) response.usage = usage
    return response
  }

  private async readStream (body: Readable, options: ChatCallOptions): Promise<ChatResponse> {
    const parser = new SseParser()
    let text = ''
    let finishReason: string | undefined
    let usage: ChatResponse['usage']
    let size = 0
    let done = false
    const identity: ChatResponse = { text: '', toolCalls: [] }
    const calls = new Map<number, { id: string, name: string, arguments: string }>()

    const handle = (data: string): void => {
      if (data === '[DONE]') {
        done = true
        return
      }
      let chunk: WireChunk
      try {
        chunk = JSON.parse(data) as WireChunk
      } catch {
        throw new ProviderError('PROVIDER_BAD_RESPONSE', 'provider stream carried an event that is not JSON')
      }
      if (chunk.error !== undefined) throw new ProviderError('PROVIDER_ERROR', `provider error: ${scrubText(chunk.error.message ?? 'unknown')}`)
      identify(identity, chunk)
      // Some servers repeat a running usage on every chunk: the last one counts.
      usage = readUsage(chunk.usage) ?? usage
      const choice = chunk.choices?.[0]
      if (choice === undefined) return
      if (choice.finish_reason != null) finishReason = choice.finish_reason
      const delta = choice.delta
      if (delta === undefined) return
      const reasoning = reasoningOf(delta)
      if (reasoning !== '') options.onReasoningDelta?.(reasoning)
      if (typeof delta.content === 'string' && delta.content !== '') {
        text += delta.content
        options.onTextDelta?.(delta.content)
      }
      for (const part of delta.tool_calls ?? []) {
        const index = part.index ?? calls.size
        let call = calls.get(index)
        if (call === undefined) {
          call = { id: '', name: '', arguments: '' }
          calls.set(index, call)
        }
        if (part.id !== undefined && part.id !== '') call.id = part.id
        if (part.function?.name !== undefined) call.name += part.function.name
        if (part.function?.arguments !== undefined) call.arguments += part.function.arguments
      }
    }

    // After [DONE] the response is read to its end rather than broken off: leaving a stream's
    // iterator early destroys it with an AbortError, and formatting that error's stack was the
    // costliest step of a streamed call. What follows [DONE] is ignored, and a server that keeps
    // the response open after it is cut off after DONE_DRAIN_MS.
    let drain: NodeJS.Timeout | undefined
    try {
      for await (const chunk of body) {
        if (done) continue
        size += chunk.length
        if (size > this.config.max_response_bytes) throw new ProviderError('PROVIDER_BAD_RESPONSE', `provider stream exceeds ${this.config.max_response_bytes} bytes`)
        for (const message of parser.feed(chunk)) handle(message.data)
        if (done) drain = setTimeout(() => { body.destroy() }, DONE_DRAIN_MS)
      }
    } catch (err) {
      // The response cut off (by us or the connection) after [DONE]: the answer is whole. A
      // message of the [DONE] chunk itself that failed (a ProviderError of ours) still fails it.
      if (!done || err instanceof ProviderError) throw err
    } finally {
      clearTimeout(drain)
    }
    if (!done) for (const message of parser.end()) handle(message.data)
    if (options.signal.aborted) throw options.signal.reason instanceof Error ? options.signal.reason : new Error('aborted')
    // A connection cut mid-stream can look like a clean end; a whole answer names why it finished.
    if (!done && finishReason === undefined) {
      throw new ProviderError('PROVIDER_UNAVAILABLE', 'provider stream ended before its finish_reason or [DONE]', { retryable: true })
    }
    const toolCalls = [...calls.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([index, c]) => ({ id: c.id === '' ? `call_${index}` : c.id, name: c.name, arguments: c.arguments }))
    const response: ChatResponse = { text, toolCalls }
    if (identity.id !== undefined) response.id = identity.id
    if (identity.model !== undefined) response.model = identity.model
    if (finishReason !== undefined) response.finishReason = finishReason
    if (usage !== undefined) response.usage = usage
    return response
  }

  async close (): Promise<void> {
    await this.http.close()
  }
}
