/**
 * What every HTTP provider kind shares: one undici Agent with bounded timeouts, the attempt loop
 * (retries of connection failures, 429 and 5xx before anything streamed, within
 * `total_timeout_ms`), failure classification, bounded body reads and an event-stream reader.
 * A kind brings its wire format: the body it posts, how it reads an answer, and how it reads a
 * refusal.
 */
import type { Readable } from 'node:stream'
import { Agent, request, errors as undiciErrors, type Dispatcher } from 'undici'
import type { ProviderConfig } from '../../schemas/config.js'
import { callDeadline, retryDelay, type CallDeadline, type RetryPolicy } from './retry.js'
import { SseParser, type SseMessage } from './sse.js'
import { ProviderError, type ChatCallOptions, type ChatResponse, type ProviderEndpoint } from './types.js'

/** A URL the config validated still may not parse (no base_url): then no endpoint is reported. */
export function endpointOf (url: string): ProviderEndpoint | undefined {
  try {
    const parsed = new URL(url)
    const port = parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port)
    // URL keeps IPv6 hosts in brackets; server.address is the bare address.
    return { address: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port }
  } catch {
    return undefined
  }
}

export function tokenCount (value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null
}

/** Reads one answered response (status < 400) into a ChatResponse. */
export type ReadAnswer = (res: Dispatcher.ResponseData, options: ChatCallOptions) => Promise<ChatResponse>
/** Makes the error of a refused request (status ≥ 400) from its status, headers and (bounded) body. */
export type ReadRefusal = (status: number, headers: Dispatcher.ResponseData['headers'], body: string) => ProviderError

export class ProviderHttp {
  readonly endpoint: ProviderEndpoint | undefined
  private readonly dispatcher: Agent
  private readonly connectTimeoutMs: number
  private readonly retry: RetryPolicy

  constructor (private readonly config: ProviderConfig, readonly url: string) {
    this.endpoint = endpointOf(url)
    this.connectTimeoutMs = Math.min(config.timeout_ms, 10_000)
    this.retry = { maxRetries: config.max_retries, initialDelayMs: config.retry_initial_delay_ms, maxDelayMs: config.retry_max_delay_ms }
    this.dispatcher = new Agent({
      headersTimeout: config.timeout_ms,
      bodyTimeout: config.timeout_ms,
      connect: { timeout: this.connectTimeoutMs }
    })
  }

  /**
   * One model call: attempts until one succeeds, a failure is not retryable, the retries are used
   * up or `total_timeout_ms` has passed. Once any text or reasoning went to the caller no retry
   * happens: clients already saw it, and a second attempt would stream it again.
   */
  async call (
    body: string, headers: Record<string, string>, options: ChatCallOptions, read: ReadAnswer, refusal: ReadRefusal
  ): Promise<ChatResponse> {
    const deadline = callDeadline(this.config.total_timeout_ms, options.signal)
    try {
      for (let retry = 0; ; retry++) {
        let streamed = false
        const { onTextDelta, onReasoningDelta } = options
        const attempt: ChatCallOptions = {
          signal: deadline.signal,
          ...(onTextDelta === undefined ? {} : { onTextDelta: (text: string) => { streamed = true; onTextDelta(text) } }),
          ...(onReasoningDelta === undefined ? {} : { onReasoningDelta: (text: string) => { streamed = true; onReasoningDelta(text) } })
        }
        try {
          return await this.attempt(body, headers, attempt, read, refusal)
        } catch (raw) {
          const err = this.classify(raw, options.signal, deadline)
          if (!(err instanceof ProviderError) || !err.retryable || streamed) throw err
          const delay = retryDelay(this.retry, retry, err.retryAfterMs)
          if (delay === null || delay >= deadline.remainingMs()) throw err
          const status = err.status === undefined ? {} : { status: err.status }
          options.onRetry?.({ retry: retry + 1, delay_ms: delay, code: err.code, reason: err.message, ...status })
          await deadline.pause(delay)
        }
      }
    } finally {
      deadline.dispose()
    }
  }

  private async attempt (
    body: string, headers: Record<string, string>, options: ChatCallOptions, read: ReadAnswer, refusal: ReadRefusal
  ): Promise<ChatResponse> {
    const res = await request(this.url, { method: 'POST', headers, body, dispatcher: this.dispatcher, signal: options.signal })
    try {
      if (res.statusCode >= 400) {
        const text = await this.readText(res.body, 4096, options.signal).catch(() => '')
        throw refusal(res.statusCode, res.headers, text)
      }
      return await read(res, options)
    } catch (err) {
      res.body.destroy()
      throw err
    }
  }

  /** The caller's cancellation wins; then the total deadline; then what the failure itself says. */
  private classify (err: unknown, caller: AbortSignal, deadline: CallDeadline): Error {
    if (caller.aborted) return caller.reason instanceof Error ? caller.reason : new Error('aborted')
    if (deadline.expired()) {
      const limit = this.config.total_timeout_ms
      return new ProviderError('PROVIDER_TIMEOUT', `provider call did not finish within total_timeout_ms (${limit} ms)`, { cause: err })
    }
    if (err instanceof ProviderError) return err
    if (err instanceof undiciErrors.ConnectTimeoutError) {
      const message = `provider did not accept a connection within ${this.connectTimeoutMs} ms`
      return new ProviderError('PROVIDER_TIMEOUT', message, { cause: err, retryable: true })
    }
    if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) {
      return new ProviderError('PROVIDER_TIMEOUT', `provider did not answer within ${this.config.timeout_ms} ms`, { cause: err })
    }
    return new ProviderError('PROVIDER_UNAVAILABLE', `provider request failed: ${(err as Error).message}`, { cause: err, retryable: true })
  }

  async readText (body: AsyncIterable<Buffer>, limit: number, signal: AbortSignal): Promise<string> {
    const parts: Buffer[] = []
    let size = 0
    for await (const chunk of body) {
      if (signal.aborted) break
      size += chunk.length
      if (size > limit) throw new ProviderError('PROVIDER_BAD_RESPONSE', `provider response exceeds ${limit} bytes`)
      parts.push(chunk)
    }
    return Buffer.concat(parts).toString('utf8')
  }

  /** A JSON answer, bounded by `max_response_bytes`. */
  async readJson<T>(body: Readable, signal: AbortSignal): Promise<T> {
    const text = await this.readText(body, this.config.max_response_bytes, signal)
    try {
      return JSON.parse(text) as T
    } catch {
      throw new ProviderError('PROVIDER_BAD_RESPONSE', 'provider response is not valid JSON')
    }
  }

  /**
   * The events of a streamed answer, each handed to `handle` with its data parsed as JSON, until
   * the stream ends; the whole stream is bounded by `max_response_bytes`.
   */
  async readEvents (body: Readable, signal: AbortSignal, handle: (event: string, data: Record<string, unknown>) => void): Promise<void> {
    const parser = new SseParser()
    let size = 0
    const each = (message: SseMessage): void => {
      let data: unknown
      try {
        data = JSON.parse(message.data)
      } catch {
        throw new ProviderError('PROVIDER_BAD_RESPONSE', 'provider stream carried an event that is not JSON')
      }
      if (typeof data !== 'object' || data === null) throw new ProviderError('PROVIDER_BAD_RESPONSE', 'provider stream carried an event that is not an object')
      handle(message.event, data as Record<string, unknown>)
    }
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length
      if (size > this.config.max_response_bytes) throw new ProviderError('PROVIDER_BAD_RESPONSE', `provider stream exceeds ${this.config.max_response_bytes} bytes`)
      for (const message of parser.feed(chunk)) each(message)
    }
    for (const message of parser.end()) each(message)
    if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted')
  }

  async close (): Promise<void> {
    await this.dispatcher.close()
  }
}
