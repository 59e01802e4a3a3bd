/**
 * Anthropic Messages API provider (`kind = "anthropic"`): POST {base_url}/messages with
 * `x-api-key` and `anthropic-version`, the system prompt top-level, tools as
 * `{name, description, input_schema}`, tool results as `tool_result` blocks. The content blocks of
 * an answer (thinking with its signature, redacted_thinking, text, tool_use) are kept as the
 * message's provider state and sent back unchanged: Anthropic checks thinking signatures during
 * tool use. Thinking streams as reasoning; usage carries the prompt-cache counts.
 */
import type { Dispatcher } from 'undici'
import { ANTHROPIC_DEFAULT_MAX_TOKENS, type ProviderConfig } from '../../schemas/config.js'
import { scrubText } from '../core/security/redact.js'
import type { ToolSpec } from '../tools/contract.js'
import { ProviderHttp, tokenCount } from './http-call.js'
import { parseRetryAfter } from './retry.js'
import {
  ProviderError, type ChatCallOptions, type ChatMessage, type ChatRequest, type ChatResponse, type ChatUsage, type ModelProvider,
  type ProviderEndpoint
} from './types.js'

export const ANTHROPIC_KIND = 'anthropic'
const DEFAULT_BASE_URL = 'https://api.anthropic.com/v1'
const EPHEMERAL = { type: 'ephemeral' } as const

type Block = Record<string, unknown> & { type?: string }
interface WireMessage { role: 'user' | 'assistant', content: string | Block[] }

interface WireUsage {
  input_tokens?: unknown
  output_tokens?: unknown
  cache_creation_input_tokens?: unknown
  cache_read_input_tokens?: unknown
}

/** Error types whose retry may succeed (Anthropic's errors reference): overload, rate limit, its own failure. */
const RETRYABLE_ERRORS = new Set(['overloaded_error', 'rate_limit_error', 'api_error'])

/** The blocks of an assistant message kept by this provider, when the message carries them. */
function keptBlocks (m: ChatMessage): Block[] | null {
  if (m.provider_state?.kind !== ANTHROPIC_KIND) return null
  const data = m.provider_state.data as { content?: unknown } | null
  return Array.isArray(data?.content) ? data.content as Block[] : null
}

function toolInput (args: string): Record<string, unknown> {
  try {
    const value = JSON.parse(args) as unknown
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}
  } catch {
    return {}
  }
}

function assistantContent (m: ChatMessage): string | Block[] {
  const kept = keptBlocks(m)
  if (kept !== null) return kept
  if (m.tool_calls === undefined || m.tool_calls.length === 0) return m.content ?? ''
  const blocks: Block[] = m.content === null || m.content.trim() === '' ? [] : [{ type: 'text', text: m.content }]
  for (const c of m.tool_calls) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: toolInput(c.arguments) })
  return blocks
}

function asBlocks (content: string | Block[]): Block[] {
  return typeof content === 'string' ? (content === '' ? [] : [{ type: 'text', text: content }]) : content
}

/**
 * The history as Messages API turns: tool results become `tool_result` blocks of a user turn, and
 * consecutive turns of one role are joined (the API alternates roles; all results of a round
 * belong in the one user turn after its tool_use blocks).
 */
export function toAnthropicMessages (history: readonly ChatMessage[]): { system: string, messages: WireMessage[] } {
  const system: string[] = []
  const messages: WireMessage[] = []
  const push = (role: WireMessage['role'], content: string | Block[]): void => {
    const last = messages.at(-1)
    if (last?.role === role) {
      last.content = [...asBlocks(last.content), ...asBlocks(content)]
      return
    }
    messages.push({ role, content })
  }
  for (const m of history) {
    if (m.role === 'system') {
      if (m.content !== null && m.content !== '') system.push(m.content)
    } else if (m.role === 'tool') {
      push('user', [{ type: 'tool_result', tool_use_id: m.tool_call_id ?? '', content: m.content ?? '' }])
    } else if (m.role === 'assistant') {
      const content = assistantContent(m)
      // An empty assistant turn is refused by the API; it adds nothing to the conversation.
      if (content !== '' && !(Array.isArray(content) && content.length === 0)) push('assistant', content)
    } else {
      push('user', m.content ?? '')
    }
  }
  return { system: system.join('\n\n'), messages }
}

function readUsage (usage: WireUsage | undefined, into: Partial<Record<keyof WireUsage, number>>): void {
  if (usage === undefined || usage === null || typeof usage !== 'object') return
  for (const key of ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const) {
    const n = tokenCount(usage[key])
    if (n !== null) into[key] = n
  }
}

/**
 * Anthropic's input_tokens count only what was neither read from nor written to the cache; the
 * turn's prompt_tokens are every prompt token, so the cache counts are added in.
 */
function chatUsage (u: Partial<Record<keyof WireUsage, number>>): ChatUsage | undefined {
  if (u.input_tokens === undefined || u.output_tokens === undefined) return undefined
  const read = u.cache_read_input_tokens
  const write = u.cache_creation_input_tokens
  const usage: ChatUsage = { input_tokens: u.input_tokens + (read ?? 0) + (write ?? 0), output_tokens: u.output_tokens }
  if (read !== undefined) usage.cache_read_tokens = read
  if (write !== undefined) usage.cache_write_tokens = write
  return usage
}

/** The answer's text, tool calls and provider state from its content blocks. */
function answerOf (blocks: readonly Block[], rawInputs: ReadonlyMap<number, string>): Pick<ChatResponse, 'text' | 'toolCalls' | 'providerState'> {
  let text = ''
  const toolCalls: ChatResponse['toolCalls'] = []
  blocks.forEach((b, i) => {
    if (b.type === 'text' && typeof b.text === 'string') text += b.text
    if (b.type === 'tool_use') {
      toolCalls.push({ id: String(b.id ?? `toolu_${i}`), name: String(b.name ?? ''), arguments: rawInputs.get(i) ?? JSON.stringify(b.input ?? {}) })
    }
  })
  return { text, toolCalls, providerState: { kind: ANTHROPIC_KIND, data: { content: blocks } } }
}

function streamError (data: Record<string, unknown>): ProviderError {
  const error = (data.error ?? {}) as { type?: unknown, message?: unknown }
  const type = typeof error.type === 'string' ? error.type : 'error'
  const message = `provider error: ${type}: ${scrubText(typeof error.message === 'string' ? error.message : 'unknown')}`
  return RETRYABLE_ERRORS.has(type)
    ? new ProviderError('PROVIDER_UNAVAILABLE', message, { retryable: true })
    : new ProviderError('PROVIDER_ERROR', message)
}

export interface AnthropicProviderOptions {
  name: string
  config: ProviderConfig
  apiKey: string | undefined
}

export class AnthropicProvider implements ModelProvider {
  readonly name: string
  readonly kind = ANTHROPIC_KIND
  readonly nativeTools: boolean
  readonly endpoint: ProviderEndpoint | undefined
  private readonly config: ProviderConfig
  private readonly apiKey: string | undefined
  private readonly http: ProviderHttp
  /** Wire form of each shared spec, made once per spec object. */
  private readonly wireTools = new WeakMap<ToolSpec, Block>()

  constructor (options: AnthropicProviderOptions) {
    this.name = options.name
    this.config = options.config
    this.apiKey = options.apiKey
    this.nativeTools = options.config.native_tools
    const base = options.config.base_url ?? DEFAULT_BASE_URL
    this.http = new ProviderHttp(options.config, `${base.replace(/\/+$/, '')}/messages`)
    this.endpoint = this.http.endpoint
  }

  private wireTool (spec: ToolSpec): Block {
    let wire = this.wireTools.get(spec)
    if (wire === undefined) {
      wire = { name: spec.name, description: spec.description, input_schema: spec.parameters }
      this.wireTools.set(spec, wire)
    }
    return wire
  }

  payload (req: ChatRequest): string {
    const { config } = this
    const { system, messages } = toAnthropicMessages(req.messages)
    const breakpoints = new Set(config.cache_breakpoints)
    const payload: Record<string, unknown> = {
      model: req.model,
      max_tokens: config.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
      messages,
      stream: config.stream
    }
    if (system !== '') payload.system = breakpoints.has('system') ? [{ type: 'text', text: system, cache_control: EPHEMERAL }] : system
    if (req.tools !== undefined && req.tools.length > 0) {
      const tools = req.tools.map((s) => this.wireTool(s))
      const last = tools.length - 1
      payload.tools = breakpoints.has('tools') ? tools.map((t, i) => i === last ? { ...t, cache_control: EPHEMERAL } : t) : tools
    }
    const lastMessage = messages.at(-1)
    if (breakpoints.has('history') && lastMessage !== undefined) {
      const blocks = asBlocks(lastMessage.content)
      const end = blocks.length - 1
      if (end >= 0) lastMessage.content = blocks.map((b, i) => i === end ? { ...b, cache_control: EPHEMERAL } : b)
    }
    if (config.thinking_budget_tokens !== undefined) {
      payload.thinking = { type: 'enabled', budget_tokens: config.thinking_budget_tokens }
    } else {
      // Extended thinking does not allow a changed temperature.
      const temperature = req.temperature ?? config.temperature
      if (temperature !== undefined) payload.temperature = Math.min(temperature, 1)
    }
    return JSON.stringify(payload)
  }

  private headers (): Record<string, string> {
    const headers: Record<string, string> = {
      ...this.config.headers,
      'content-type': 'application/json',
      accept: this.config.stream ? 'text/event-stream' : 'application/json',
      'anthropic-version': this.config.anthropic_version
    }
    if (this.apiKey !== undefined && this.apiKey !== '') headers['x-api-key'] = this.apiKey
    return headers
  }

  async chat (req: ChatRequest, options: ChatCallOptions): Promise<ChatResponse> {
    return await this.http.call(this.payload(req), this.headers(), options, async (res, attempt) => await this.read(res, attempt), refusal)
  }

  private async read (res: Dispatcher.ResponseData, options: ChatCallOptions): Promise<ChatResponse> {
    const contentType = String(res.headers['content-type'] ?? '')
    if (this.config.stream && contentType.includes('text/event-stream')) return await this.readStream(res, options)
    const json = await this.http.readJson<Record<string, unknown>>(res.body, options.signal)
    if (json.type === 'error') throw streamError(json)
    if (!Array.isArray(json.content)) throw new ProviderError('PROVIDER_BAD_RESPONSE', 'provider response has no content array')
    const blocks = json.content as Block[]
    const response: ChatResponse = answerOf(blocks, new Map())
    const reasoning = blocks.map((b) => b.type === 'thinking' && typeof b.thinking === 'string' ? b.thinking : '').join('')
    if (reasoning !== '') response.reasoning = reasoning
    const counts: Partial<Record<keyof WireUsage, number>> = {}
    readUsage(json.usage as WireUsage | undefined, counts)
    return finish(response, { id: json.id, model: json.model, stopReason: json.stop_reason, usage: chatUsage(counts) })
  }

  private async readStream (res: Dispatcher.ResponseData, options: ChatCallOptions): Promise<ChatResponse> {
    const blocks: Block[] = []
    const inputs = new Map<number, string>()
    const usage: Partial<Record<keyof WireUsage, number>> = {}
    const meta: { id?: unknown, model?: unknown, stopReason?: unknown } = {}
    let stopped = false
    await this.http.readEvents(res.body, options.signal, (_event, data) => {
      switch (data.type) {
        case 'message_start': {
          const message = (data.message ?? {}) as Record<string, unknown>
          meta.id = message.id
          meta.model = message.model
          readUsage(message.usage as WireUsage | undefined, usage)
          break
        }
        case 'content_block_start': {
          const index = Number(data.index)
          const block = { ...(data.content_block as Block) }
          blocks[index] = block
          if (block.type === 'thinking' && typeof block.thinking === 'string' && block.thinking !== '') options.onReasoningDelta?.(block.thinking)
          if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') options.onTextDelta?.(block.text)
          break
        }
        case 'content_block_delta':
          this.applyDelta(blocks, inputs, Number(data.index), (data.delta ?? {}) as Record<string, unknown>, options)
          break
        case 'content_block_stop': {
          const index = Number(data.index)
          const block = blocks[index]
          if (block?.type === 'tool_use' && inputs.has(index)) block.input = toolInput(inputs.get(index) ?? '')
          break
        }
        case 'message_delta':
          meta.stopReason = ((data.delta ?? {}) as Record<string, unknown>).stop_reason ?? meta.stopReason
          readUsage(data.usage as WireUsage | undefined, usage)
          break
        case 'message_stop':
          stopped = true
          break
        case 'error':
          throw streamError(data)
      }
    })
    // A connection cut mid-stream can look like a clean end; a whole answer ends with message_stop.
    if (!stopped) throw new ProviderError('PROVIDER_UNAVAILABLE', 'provider stream ended before message_stop', { retryable: true })
    const response = answerOf(blocks.filter((b) => b !== undefined), inputs)
    return finish(response, { ...meta, usage: chatUsage(usage) })
  }

  private applyDelta (
    blocks: Block[], inputs: Map<number, string>, index: number, delta: Record<string, unknown>, options: ChatCallOptions
  ): void {
    const block = blocks[index]
    if (block === undefined) throw new ProviderError('PROVIDER_BAD_RESPONSE', `provider stream has a delta for block ${index} before its start`)
    switch (delta.type) {
      case 'text_delta':
        if (typeof delta.text !== 'string') return
        block.text = `${String(block.text ?? '')}${delta.text}`
        options.onTextDelta?.(delta.text)
        return
      case 'thinking_delta':
        if (typeof delta.thinking !== 'string') return
        block.thinking = `${String(block.thinking ?? '')}${delta.thinking}`
        options.onReasoningDelta?.(delta.thinking)
        return
      case 'signature_delta':
        if (typeof delta.signature === 'string') block.signature = `${String(block.signature ?? '')}${delta.signature}`
        return
      case 'input_json_delta':
        if (typeof delta.partial_json === 'string') inputs.set(index, `${inputs.get(index) ?? ''}${delta.partial_json}`)
    }
  }

  async close (): Promise<void> {
    await this.http.close()
  }
}

function finish (
  answer: Pick<ChatResponse, 'text' | 'toolCalls' | 'providerState'> & { reasoning?: string },
  meta: { id?: unknown, model?: unknown, stopReason?: unknown, usage: ChatUsage | undefined }
): ChatResponse {
  const response: ChatResponse = { ...answer }
  if (typeof meta.id === 'string' && meta.id !== '') response.id = meta.id
  if (typeof meta.model === 'string' && meta.model !== '') response.model = meta.model
  if (typeof meta.stopReason === 'string') response.finishReason = meta.stopReason
  if (meta.usage !== undefined) response.usage = meta.usage
  return response
}

/** A refused request: Anthropic's `{type: "error", error: {type, message}}`, its status and Retry-After. */
function refusal (status: number, headers: Dispatcher.ResponseData['headers'], body: string): ProviderError {
  let detail = scrubText(body).slice(0, 500)
  try {
    const json = JSON.parse(body) as { error?: { type?: unknown, message?: unknown } }
    if (typeof json.error?.type === 'string') detail = `${json.error.type}: ${scrubText(String(json.error.message ?? '')).slice(0, 500)}`
  } catch {}
  // The API says outright whether a retry may succeed (`x-should-retry`); else 408, 409, 429 and 5xx (529: overloaded).
  const should = headers['x-should-retry']
  const retryable = should === 'true' ||
    (should !== 'false' && (status === 408 || status === 409 || status === 429 || status >= 500))
  return new ProviderError('PROVIDER_ERROR', `provider answered HTTP ${status}: ${detail}`, {
    status, retryable, retryAfterMs: parseRetryAfter(headers['retry-after'])
  })
}
