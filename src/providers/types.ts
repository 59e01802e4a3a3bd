/**
 * The provider seam: one chat call with optional native tools. History is kept in the
 * OpenAI chat shape because it is the lingua franca of tool-calling providers.
 */
import type { ToolSpec } from '../tools/contract.js'

export interface ChatToolCall {
  id: string
  name: string
  /** JSON text exactly as the model produced it; parsing (and its failure) is the parser's job. */
  arguments: string
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: string | null
  tool_calls?: ChatToolCall[]
  tool_call_id?: string
  name?: string
}

export interface ChatRequest {
  model: string
  messages: readonly ChatMessage[]
  /** Present only when the provider receives native tool specs this iteration. */
  tools?: readonly ToolSpec[]
  temperature?: number
}

/** Tokens of one answered call, as the provider reported them (prompt and completion). */
export interface ChatUsage {
  input_tokens: number
  output_tokens: number
  /** Of `input_tokens`, those served from the provider's prompt cache. */
  cached_input_tokens?: number
  /** Of `output_tokens`, the model's hidden reasoning. */
  reasoning_tokens?: number
}

export interface ChatResponse {
  text: string
  toolCalls: ChatToolCall[]
  usage?: ChatUsage
  finishReason?: string
  /** The provider's id for this completion (`id` of the chat-completions body or chunks). */
  id?: string
  /** The model that actually answered, as the provider names it (may be a dated variant of the requested one). */
  model?: string
}

/** Host and port the provider's requests go to, for `server.address` / `server.port` on spans. */
export interface ProviderEndpoint {
  address: string
  port: number
}

/** A failed attempt that is about to be retried. */
export interface ProviderRetry {
  /** 1 for the first retry. */
  retry: number
  delay_ms: number
  code: ProviderErrorCode
  status?: number
  reason: string
}

export interface ChatCallOptions {
  signal: AbortSignal
  /** Called with visible text as it streams; absent when the caller wants no live text. */
  onTextDelta?: (text: string) => void
  /** Told before each retry (for the turn's log). */
  onRetry?: (retry: ProviderRetry) => void
}

export interface ModelProvider {
  readonly name: string
  readonly kind: string
  /** Whether tool specs go on the wire (native) or into the prompt (text protocol). */
  readonly nativeTools: boolean
  /** Absent for in-process providers (demo). */
  readonly endpoint?: ProviderEndpoint
  chat (request: ChatRequest, options: ChatCallOptions): Promise<ChatResponse>
  close (): Promise<void>
}

export type ProviderErrorCode = 'PROVIDER_ERROR' | 'PROVIDER_UNAVAILABLE' | 'PROVIDER_BAD_RESPONSE' | 'PROVIDER_TIMEOUT'

export interface ProviderErrorOptions {
  status?: number
  cause?: unknown
  /** A new attempt may succeed: the connection failed, or the provider answered 429 or 5xx. */
  retryable?: boolean
  /** The provider's Retry-After, in ms from when it answered. */
  retryAfterMs?: number
}

export class ProviderError extends Error {
  readonly code: ProviderErrorCode
  readonly status: number | undefined
  readonly retryable: boolean
  readonly retryAfterMs: number | undefined

  constructor (code: ProviderErrorCode, message: string, options: ProviderErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ProviderError'
    this.code = code
    this.status = options.status
    this.retryable = options.retryable === true
    this.retryAfterMs = options.retryAfterMs
  }
}
