/**
 * Server-sent events of one turn over an HTTP response: replay after a seq, then live events
 * (`id:` = seq, `event:` = kind, `data:` = the envelope), a comment line every keep-alive period
 * so idle-cutting proxies keep the stream, and the end after the terminal event. The POST stream
 * (which owns its turn) and the GET stream (which never does) both use it; who owns what is the
 * caller's business.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { FastifyBaseLogger } from 'fastify'
import type { BusEnvelope, EventBus } from '../bus/bus.js'
import { TollgateError } from '../errors.js'
import type { GatewayMetrics } from '../observe/metrics.js'
import { followTurn } from './follow.js'

export interface SseStreamOptions {
  raw: ServerResponse
  /** Headers hooks already set on the reply (x-request-id), passed on because the reply is hijacked. */
  headers: OutgoingHttpHeaders
  bus: EventBus
  turnId: string
  afterSeq: number
  knownLastSeq: number
  keepaliveMs: number
  /** Slow-consumer bound, as for WebSockets: a reader this far behind loses the stream. */
  maxBufferedBytes: number
  log: FastifyBaseLogger
  metrics: GatewayMetrics | null
  /** Runs once when the stream is over: terminal event sent, client gone, or slow consumer cut. */
  onClose: () => void
  /** Takes the response away from the framework; called once the stream is known to start. */
  hijack: () => void
}

function frame (envelope: BusEnvelope): string {
  const { session_id: _s, ...wire } = envelope
  return `id: ${envelope.seq}\nevent: ${envelope.event.kind}\ndata: ${JSON.stringify(wire)}\n\n`
}

/**
 * Starts the stream. A replay gap throws REPLAY_GAP before anything was written, so the caller's
 * error handler still answers problem JSON; after that, every failure just ends the stream.
 */
export async function streamTurnEvents (options: SseStreamOptions): Promise<void> {
  const { raw } = options
  // Events replayed before the headers are out wait here, in order.
  let early: BusEnvelope[] | null = []
  let ended = false
  let closed = false
  let keepalive: NodeJS.Timeout | undefined
  const close = (): void => {
    if (closed) return
    closed = true
    clearInterval(keepalive)
    unsubscribe?.()
    if (!raw.writableEnded) raw.end()
    options.onClose()
  }
  const write = (envelope: BusEnvelope): void => {
    if (closed) return
    if (raw.writableLength > options.maxBufferedBytes) {
      options.log.warn({ turn_id: options.turnId, buffered: raw.writableLength }, 'closing a slow SSE consumer')
      raw.destroy()
      close()
      return
    }
    raw.write(frame(envelope))
    options.metrics?.eventSent('sse')
  }
  let unsubscribe: (() => void) | undefined
  const followed = await followTurn({
    bus: options.bus,
    turnId: options.turnId,
    afterSeq: options.afterSeq,
    knownLastSeq: options.knownLastSeq,
    deliver: (envelope) => {
      if (early !== null) early.push(envelope)
      else write(envelope)
    },
    onEnd: () => {
      ended = true
      if (early === null) close()
    }
  })
  if (followed.kind === 'gap') throw new TollgateError('REPLAY_GAP', 'these events are no longer retained; refetch the turn')
  unsubscribe = followed.unsubscribe

  options.hijack()
  raw.writeHead(200, {
    ...options.headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-turn-id': options.turnId
  })
  raw.on('close', close)
  // The client may have gone while the replay was read: its 'close' already fired.
  if (raw.destroyed) {
    close()
    return
  }
  const replayed = early
  early = null
  for (const envelope of replayed) write(envelope)
  if (ended) {
    close()
    return
  }
  if (options.keepaliveMs > 0) {
    keepalive = setInterval(() => { if (!closed) raw.write(': keep-alive\n\n') }, options.keepaliveMs)
    keepalive.unref()
  }
}
