/**
 * The one writer of `text/event-stream` responses, whatever the frames say (Tollgate's own events,
 * AG-UI, the AI SDK's UI message stream): the headers once, with those that request hooks set
 * (x-request-id, CORS) passed on by hand because the response is hijacked from Fastify; frames as
 * they are given; a comment line every `server.sse_keepalive_ms`, which every SSE parser skips,
 * so a proxy that cuts idle connections keeps the stream through a long tool call or model wait;
 * the slow-consumer policy of every streaming transport (slow-consumer.ts); one close.
 */
import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyReply } from 'fastify'
import type { Logger } from 'pino'
import type { Config } from '../core/config.js'
import { isSlowConsumer, logSlowConsumer } from './slow-consumer.js'
import { sendNow } from './send-now.js'

const KEEPALIVE = ': keep-alive\n\n'

export interface SseWriterOptions {
  reply: FastifyReply
  turnId: string
  /** Protocol markers beside the SSE headers (the AI SDK's stream version, say). */
  headers?: OutgoingHttpHeaders
  /** The slow-consumer bound and the keep-alive period are read from here. */
  config: Config
  log: Logger
  /** What a slow-consumer warning names besides the turn. */
  logFields?: Record<string, unknown>
  /** Runs once when the response is over: closed here, by the client, or cut as a slow consumer. */
  onClose: () => void
}

export class SseWriter {
  private opened = false
  private closed = false
  private wrote = false
  private keepalive: NodeJS.Timeout | undefined

  constructor (private readonly options: SseWriterOptions) {}

  /** The client went away (or the response was cut) before or while it was written to. */
  get gone (): boolean {
    return this.options.reply.raw.destroyed
  }

  /** Sends the status line and headers (held by Node until the first body bytes or flush()). */
  open (): void {
    if (this.opened) return
    this.opened = true
    const { reply, turnId, headers } = this.options
    const hookHeaders = reply.getHeaders() as OutgoingHttpHeaders
    reply.hijack()
    const raw = reply.raw
    raw.writeHead(200, {
      ...hookHeaders,
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-turn-id': turnId
    })
    raw.on('close', this.close)
    const every = this.options.config.server.sse_keepalive_ms
    if (every > 0) {
      this.keepalive = setInterval(() => { if (!this.closed) raw.write(KEEPALIVE) }, every)
      this.keepalive.unref()
    }
  }

  /** Writes frames; false when the stream is over, or the reader fell too far behind and was cut. */
  write (frames: string | readonly string[]): boolean {
    if (this.closed) return false
    const raw = this.options.reply.raw
    if (isSlowConsumer(this.options.config, raw.writableLength)) {
      logSlowConsumer(this.options.log, 'SSE', { turn_id: this.options.turnId, ...this.options.logFields }, raw.writableLength)
      raw.destroy()
      this.close()
      return false
    }
    if (typeof frames === 'string') raw.write(frames)
    else for (const frame of frames) raw.write(frame)
    if (!this.wrote) {
      this.wrote = true
      sendNow(raw)
    }
    return true
  }

  /**
   * Sends the headers now when nothing was written yet: a stream that has nothing to say at
   * first (a resume at the turn's last seq) would otherwise show the client nothing until an
   * event or the first keep-alive.
   */
  flushHeaders (): void {
    if (!this.wrote && !this.closed) this.options.reply.raw.flushHeaders()
  }

  readonly close = (): void => {
    if (this.closed) return
    this.closed = true
    clearInterval(this.keepalive)
    const raw = this.options.reply.raw
    if (!raw.writableEnded) raw.end()
    this.options.onClose()
  }
}
