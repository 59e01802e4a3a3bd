/**
 * Server-sent events of one turn over an HTTP response: replay after a seq, then live events
 * (`id:` = seq, `event:` = kind, `data:` = the envelope without its session id), a comment line
 * every `server.sse_keepalive_ms` so idle-cutting proxies keep the stream, and the end after the
 * terminal event. The owning POST stream and the never-owning GET stream both use it; who owns
 * what is the caller's business. The response is hijacked from Fastify, so headers that hooks set
 * (x-request-id, CORS) are passed on by hand. A slow reader loses the stream by the same policy
 * as a WebSocket (slow-consumer.ts).
 */
import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyReply } from 'fastify'
import type { Gateway } from '../app/gateway.js'
import type { BusEnvelope } from '../bus/bus.js'
import { TollgateError } from '../core/errors.js'
import { followTurn } from './follow.js'
import { isSlowConsumer, logSlowConsumer } from './slow-consumer.js'

export interface StreamOptions {
  turnId: string
  afterSeq: number
  /** The turn's last known seq, to tell "nothing yet" from "log already dropped". */
  knownLastSeq: number
  /** Runs once when the stream is over: terminal event sent, client gone, or slow consumer cut. */
  onClose: () => void
}

function frame (envelope: BusEnvelope): string {
  const { session_id: _s, ...wire } = envelope
  return `id: ${envelope.seq}\nevent: ${envelope.event.kind}\ndata: ${JSON.stringify(wire)}\n\n`
}

/**
 * Starts the stream. A replay gap throws REPLAY_GAP before anything was written, so the error
 * handler still answers problem JSON; after that, every failure just ends the stream.
 */
export async function streamTurnEvents (gateway: Gateway, reply: FastifyReply, options: StreamOptions): Promise<void> {
  const { bus, config, metrics, log } = gateway
  const raw = reply.raw
  // Events replayed before the headers are out wait here, in order.
  let early: BusEnvelope[] | null = []
  let ended = false
  let closed = false
  let keepalive: NodeJS.Timeout | undefined
  const subscription: { stop?: () => void } = {}
  const close = (): void => {
    if (closed) return
    closed = true
    clearInterval(keepalive)
    subscription.stop?.()
    if (!raw.writableEnded) raw.end()
    options.onClose()
  }
  const write = (envelope: BusEnvelope): void => {
    if (closed) return
    if (isSlowConsumer(config, raw.writableLength)) {
      logSlowConsumer(log, 'SSE', { turn_id: options.turnId }, raw.writableLength)
      raw.destroy()
      close()
      return
    }
    raw.write(frame(envelope))
    metrics?.eventSent('sse')
  }
  const followed = await followTurn({
    bus,
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
  if (followed.kind === 'gap') throw new TollgateError('REPLAY_GAP')
  subscription.stop = followed.unsubscribe

  const hookHeaders = reply.getHeaders() as OutgoingHttpHeaders
  reply.hijack()
  raw.writeHead(200, {
    ...hookHeaders,
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
  const every = config.server.sse_keepalive_ms
  if (every > 0) {
    keepalive = setInterval(() => { if (!closed) raw.write(': keep-alive\n\n') }, every)
    keepalive.unref()
  }
}
