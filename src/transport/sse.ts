/**
 * Server-sent events framing of one turn's events: `id:` is the seq, `event:` the event kind,
 * `data:` the envelope without its session id. The response is hijacked from Fastify, so headers
 * that hooks set (x-request-id) are passed on by hand. A slow reader loses the stream by the
 * same policy as a WebSocket (slow-consumer.ts).
 */
import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyReply } from 'fastify'
import type { Gateway } from '../app/gateway.js'
import { followTurn } from './follow.js'
import { isSlowConsumer, logSlowConsumer } from './slow-consumer.js'

export async function streamTurnEvents (gateway: Gateway, reply: FastifyReply, turnId: string, onClose: () => void): Promise<void> {
  const { bus, config, metrics, log } = gateway
  const hookHeaders = reply.getHeaders() as OutgoingHttpHeaders
  reply.hijack()
  const raw = reply.raw
  raw.writeHead(200, {
    ...hookHeaders,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-turn-id': turnId
  })
  const end = (): void => {
    onClose()
    if (!raw.writableEnded) raw.end()
  }
  const followed = await followTurn({
    bus,
    turnId,
    afterSeq: 0,
    knownLastSeq: 0,
    deliver: (envelope) => {
      if (raw.writableEnded) return
      if (isSlowConsumer(config, raw.writableLength)) {
        logSlowConsumer(log, 'SSE', { turn_id: turnId }, raw.writableLength)
        raw.destroy()
        return
      }
      const { session_id: _s, ...wire } = envelope
      raw.write(`id: ${envelope.seq}\nevent: ${envelope.event.kind}\ndata: ${JSON.stringify(wire)}\n\n`)
      metrics?.eventSent('sse')
    },
    onEnd: end
  })
  if (followed.kind === 'following') raw.on('close', followed.unsubscribe)
  else end()
}
