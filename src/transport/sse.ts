/**
 * Server-sent events of one turn over an HTTP response: replay after a seq, then live events
 * (`id:` = seq, `event:` = kind, `data:` = the envelope without its session id), a comment line
 * every `server.sse_keepalive_ms` so idle-cutting proxies keep the stream, and the end after the
 * terminal event. The owning POST stream and the never-owning GET stream both use it; who owns
 * what is the caller's business. Headers, keep-alive and the slow-consumer policy are the
 * writer's (sse-writer.ts).
 */
import type { FastifyReply } from 'fastify'
import type { Gateway } from '../app/gateway.js'
import type { BusEnvelope } from '../bus/bus.js'
import { wireEnvelope } from '../core/envelope.js'
import { TollgateError } from '../core/errors.js'
import { encodeOnce } from './encode-once.js'
import { followFromStart, followTurn } from './follow.js'
import { SseWriter } from './sse-writer.js'

export interface StreamOptions {
  turnId: string
  afterSeq: number
  /** The turn's last known seq, to tell "nothing yet" from "log already dropped". */
  knownLastSeq: number
  /** Runs once when the stream is over: terminal event sent, client gone, or slow consumer cut. */
  onClose: () => void
  /** The routes' shared encoder (createSseFrames). */
  frames: SseFrames
}

/** An event's SSE frame. */
export type SseFrames = (envelope: BusEnvelope) => string

function frame (e: BusEnvelope): string {
  return `id: ${e.seq}\nevent: ${e.event.kind}\ndata: ${JSON.stringify(wireEnvelope(e))}\n\n`
}

/** One per set of routes: an event's frame is encoded once for all the streams it reaches (encode-once.ts). */
export function createSseFrames (): SseFrames {
  return encodeOnce(frame)
}

/** One turn's event stream: the replay and live events written through one SseWriter. */
class TurnStream {
  /** Events delivered before the headers are out wait here, in order; null once they are out. */
  private early: BusEnvelope[] | null = []
  private ended = false
  private closed = false
  private readonly writer: SseWriter
  stop: (() => void) | undefined

  constructor (private readonly gateway: Gateway, reply: FastifyReply, private readonly options: StreamOptions) {
    this.writer = new SseWriter({ reply, turnId: options.turnId, config: gateway.config, log: gateway.log, onClose: this.close })
  }

  readonly deliver = (envelope: BusEnvelope): void => {
    if (this.early !== null) this.early.push(envelope)
    else this.write(envelope)
  }

  readonly end = (): void => {
    this.ended = true
    if (this.early === null) this.close()
  }

  readonly close = (): void => {
    if (this.closed) return
    this.closed = true
    this.stop?.()
    this.writer.close()
    this.options.onClose()
  }

  private write (envelope: BusEnvelope): void {
    if (this.writer.write(this.options.frames(envelope))) this.gateway.metrics?.eventSent('sse')
  }

  /** Sends the headers and whatever waited for them; from here on events are written as they come. */
  begin (): void {
    if (this.early === null) return
    this.writer.open()
    const waiting = this.early
    this.early = null
    // The client may have gone while the replay was read: its 'close' already fired.
    if (this.writer.gone) {
      this.close()
      return
    }
    for (const envelope of waiting) this.write(envelope)
    this.writer.flushHeaders()
    if (this.ended) this.close()
  }
}

/**
 * Starts the stream. A replay gap throws REPLAY_GAP before anything was written, so the error
 * handler still answers problem JSON; after that, every failure just ends the stream.
 */
export async function streamTurnEvents (gateway: Gateway, reply: FastifyReply, options: StreamOptions): Promise<void> {
  const stream = new TurnStream(gateway, reply, options)
  const followed = await followTurn({
    bus: gateway.bus,
    journal: gateway.journal,
    turnId: options.turnId,
    afterSeq: options.afterSeq,
    knownLastSeq: options.knownLastSeq,
    deliver: stream.deliver,
    onEnd: stream.end
  })
  if (followed.kind === 'gap') throw new TollgateError('REPLAY_GAP')
  stream.stop = followed.unsubscribe
  stream.begin()
}

/**
 * The stream of a turn this request is starting, subscribed before the turn's first event is
 * published (see followFromStart): the headers and turn.started go out the moment it is, before
 * the rest of the turn's set-up. `follow` is handed to the turn's start as the owner connection's
 * follow; `following` tells whether it was called (an idempotent repeat starts nothing), `stop`
 * drops the subscription of a start that failed after it.
 */
export function streamNewTurn (
  gateway: Gateway, reply: FastifyReply, onClose: () => void, frames: SseFrames
): { follow: (turnId: string) => void, following: () => boolean, stop: () => void } {
  let stream: TurnStream | null = null
  return {
    follow: (turnId) => {
      const s = new TurnStream(gateway, reply, { turnId, afterSeq: 0, knownLastSeq: 0, onClose, frames })
      stream = s
      s.stop = followFromStart({
        bus: gateway.bus,
        turnId,
        // Queued first, then begun: the headers leave with turn.started in one write. Begun first,
        // with nothing queued, they were flushed in a write (and a packet) of their own.
        deliver: (envelope) => {
          s.deliver(envelope)
          s.begin()
        },
        onEnd: s.end
      })
    },
    following: () => stream !== null,
    stop: () => { stream?.stop?.() }
  }
}
