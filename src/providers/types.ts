/**
 * The provider seam: one chat call with optional native tools. History is kept in the
 * OpenAI chat shape because it is the lingua franca of tool-calling providers.
 */
import type { ToolSpec } from '../tools/tool.js'

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

export interface ChatUsage {
  input_tokens?: number
  output_tokens?: number
}

export interface ChatResponse {
  text: string
  toolCalls: ChatToolCall[]
  usage?: ChatUsage
  finishReason?: string
}

export interface ChatCallOptions {
  signal: AbortSignal
  /** Called with visible text as it streams; absent when the caller wants no live text. */
  onTextDelta?: (text: string) => void
}

export interface ModelProvider {
  readonly name: string
  readonly kind: string
  /** Whether tool specs go on the wire (native) or into the prompt (text protocol). */
  readonly nativeTools: boolean
  chat (request: ChatRequest, options: ChatCallOptions): Promise<ChatResponse>
  close (): Promise<void>
}

export type ProviderErrorCode = 'PROVIDER_ERROR' | 'PROVIDER_UNAVAILABLE' | 'PROVIDER_BAD_RESPONSE' | 'PROVIDER_TIMEOUT'

export class ProviderError extends Error {
  readonly code: ProviderErrorCode
  readonly status: number | undefined

  constructor (code: ProviderErrorCode, message: string, options: { status?: number, cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ProviderError'
    this.code = code
    this.status = options.status
  }
}
