/**
 * /v1/turns: start (202, SSE stream, or ?wait=true), read, replay events, cancel.
 * Behaviour lives in TurnService; this file only adapts HTTP.
 */
import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { Problem, TurnIdParams } from '../schemas/common.js'
import { DEFAULT_PAGE_LIMIT } from '../schemas/approval.js'
import {
  CancelResult, EventsHeaders, EventsPage, EventsQuery, Turn, TurnAccepted, TurnEventStream, TurnRequest, TurnsPage, TurnsQuery,
  TurnStartQuery
} from '../schemas/turn.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { hasScope, principalKey } from '../src/auth/principal.js'
import { TollgateError } from '../src/errors.js'
import { streamTurnEvents, type SseStreamOptions } from '../src/gateway/sse.js'
import type { TurnRecord } from '../src/store/store.js'

const LAST_EVENT_ID = /^(0|[1-9][0-9]{0,14})$/

/** Where a stream resumes: the `Last-Event-ID` header an EventSource sends on reconnect, else `after_seq`. */
function resumePoint (request: FastifyRequest): number {
  const header = request.headers['last-event-id']
  if (typeof header === 'string' && header !== '') {
    if (!LAST_EVENT_ID.test(header)) throw new TollgateError('INVALID_REQUEST', 'Last-Event-ID must be the seq of an event of this turn')
    return Number(header)
  }
  return (request.query as { after_seq?: number }).after_seq ?? 0
}

/** A client that goes away before the response finished: `request.signal` is unreliable here. */
function onClientGone (reply: FastifyReply, fn: () => void): void {
  reply.raw.on('close', () => { if (!reply.raw.writableFinished) fn() })
}

export function publicTurn (turn: TurnRecord): Omit<TurnRecord, 'owner'> {
  const { owner: _owner, ...rest } = turn
  return rest
}

/** Whether the client asked for server-sent events. */
function wantsEventStream (request: FastifyRequest): boolean {
  return String(request.headers.accept ?? '').includes('text/event-stream')
}

export default async function turnRoutes (app: FastifyInstance): Promise<void> {
  const { turns, connections, bus, auth, config, metrics } = app.gateway
  // Hijacked replies: headers set by hooks (x-request-id, CORS) are passed on by hand.
  type StreamDeps = Pick<SseStreamOptions, 'raw' | 'headers' | 'bus' | 'keepaliveMs' | 'maxBufferedBytes' | 'log' | 'metrics' | 'hijack'>
  const streamDeps = (reply: FastifyReply): StreamDeps => ({
    raw: reply.raw,
    headers: reply.getHeaders() as OutgoingHttpHeaders,
    bus,
    keepaliveMs: config.server.sse_keepalive_ms,
    maxBufferedBytes: config.ws.max_buffered_bytes,
    log: app.log,
    metrics,
    hijack: () => { reply.hijack() }
  })

  app.post('/v1/turns', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: {
      summary: 'Start a turn',
      description: '202 by default (no owner unless owner_connection names a WebSocket). With `Accept: text/event-stream` the events stream as SSE (`id:` = seq) and the request owns the turn; with `?wait=true` the answer is 200 with the final turn and the request owns it.',
      body: TurnRequest,
      querystring: TurnStartQuery,
      response: {
        200: {
          description: 'With `?wait=true`: the finished turn. With `Accept: text/event-stream`: the turn\'s events as they happen.',
          headers: { 'x-turn-id': { description: 'The started turn (SSE answers)', schema: Type.String() } },
          content: { 'application/json': { schema: Turn }, 'text/event-stream': { schema: TurnEventStream } }
        },
        202: TurnAccepted,
        400: Problem,
        401: Problem,
        403: Problem,
        409: Problem,
        429: Problem
      }
    }
  }, async (request, reply) => {
    const principal = principalOf(request)
    const body = request.body as TurnRequest
    const { wait } = request.query as { wait?: boolean }
    const sse = wantsEventStream(request)
    if ((sse || wait === true) && body.owner_connection !== undefined) {
      throw new TollgateError('INVALID_REQUEST', 'owner_connection cannot be combined with an SSE stream or ?wait=true: the request itself owns the turn')
    }

    if (!sse && wait !== true) {
      // A repeated idempotency_key answers with the same turn, whatever its status now.
      const { turn } = await turns.start(principal, body, { ownerConnection: body.owner_connection ?? null, channel: 'http' })
      return await reply.code(202).send({ turn_id: turn.turn_id, session_id: turn.session_id, status: turn.status, events_url: `/v1/turns/${turn.turn_id}/events` })
    }

    const connection = connections.open(sse ? 'sse' : 'http', principalKey(principal), hasScope(principal, 'approvals:answer'))
    onClientGone(reply, () => { connections.close(connection.id) })
    let started
    try {
      started = await turns.start(principal, body, { ownerConnection: connection.id, channel: sse ? 'sse' : 'http' })
    } catch (err) {
      connections.close(connection.id)
      throw err
    }
    const { turn } = started
    connection.turns.add(turn.turn_id)

    if (!sse) {
      const done = await turns.waitFor(principal, turn.turn_id)
      connections.close(connection.id)
      return await reply.code(200).send(publicTurn(done))
    }

    await streamTurnEvents({
      ...streamDeps(reply),
      turnId: turn.turn_id,
      afterSeq: 0,
      knownLastSeq: 0,
      onClose: () => { connections.close(connection.id) }
    })
  })

  app.get('/v1/turns/:id', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: { summary: 'Get a turn', params: TurnIdParams, response: { 200: Turn, 401: Problem, 404: Problem } }
  }, async (request) => {
    const { id } = request.params as { id: string }
    return publicTurn(await turns.get(principalOf(request), id))
  })

  app.get('/v1/turns/:id/events', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'Replay a turn\'s events after a seq, or stream them',
      description: 'JSON by default: the retained events after `after_seq`. With `Accept: text/event-stream`: server-sent events, ' +
        'replay then live (`id:` = seq), resuming after the `Last-Event-ID` header when given (it wins over `after_seq`), a comment ' +
        'line every `server.sse_keepalive_ms`, ending after the terminal event; 204 when the turn has ended and nothing is left to send. ' +
        'This stream never owns the turn: dropping it cancels nothing.',
      params: TurnIdParams,
      querystring: EventsQuery,
      headers: EventsHeaders,
      response: {
        200: {
          description: 'The events: a page (JSON) or a stream (`Accept: text/event-stream`)',
          content: { 'application/json': { schema: EventsPage }, 'text/event-stream': { schema: TurnEventStream } }
        },
        204: { description: 'Event stream requested for an ended turn with nothing after Last-Event-ID / after_seq', type: 'null' },
        400: Problem,
        401: Problem,
        404: Problem,
        410: Problem
      }
    }
  }, async (request, reply) => {
    const { id } = request.params as { id: string }
    const principal = principalOf(request)
    const afterSeq = resumePoint(request)
    if (wantsEventStream(request)) {
      const turn = await turns.get(principal, id)
      if (turn.status !== 'running' && afterSeq >= turn.last_seq) return await reply.code(204).send()
      // Watches (and may answer through REST) but never owns: see ConnectionRegistry.follower.
      const connection = connections.open('sse', principalKey(principal), hasScope(principal, 'approvals:answer'), false)
      connection.turns.add(id)
      try {
        await streamTurnEvents({
          ...streamDeps(reply),
          turnId: id,
          afterSeq,
          knownLastSeq: turn.last_seq,
          onClose: () => { connections.close(connection.id) }
        })
      } catch (err) {
        connections.close(connection.id)
        throw err
      }
      return
    }
    const { turn, replay } = await turns.replay(principal, id, afterSeq)
    if (replay.kind === 'gap' || (replay.kind === 'unknown' && turn.last_seq > afterSeq)) {
      throw new TollgateError('REPLAY_GAP', 'these events are no longer retained; refetch the turn')
    }
    const events = replay.kind === 'events' ? replay.events.map(({ session_id: _s, ...e }) => e) : []
    return { turn_id: turn.turn_id, status: turn.status, events }
  })

  app.get('/v1/turns', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'List the principal\'s turns',
      description: 'Newest first, optionally of one session and/or in one status; only the caller\'s own turns.',
      querystring: TurnsQuery,
      response: { 200: TurnsPage, 400: Problem, 401: Problem }
    }
  }, async (request) => {
    const q = request.query as TurnsQuery
    return await turns.listTurns(principalOf(request), {
      limit: q.limit ?? DEFAULT_PAGE_LIMIT,
      ...(q.session_id === undefined ? {} : { sessionId: q.session_id }),
      ...(q.status === undefined ? {} : { status: q.status }),
      ...(q.cursor === undefined ? {} : { cursor: q.cursor })
    })
  })

  app.delete('/v1/turns/:id', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: { summary: 'Cancel a turn', params: TurnIdParams, response: { 200: CancelResult, 401: Problem, 404: Problem } }
  }, async (request) => {
    const { id } = request.params as { id: string }
    const turn = await turns.cancel(principalOf(request), id, 'cancelled by client')
    return { turn_id: turn.turn_id, status: turn.status }
  })
}
