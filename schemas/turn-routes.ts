/**
 * OpenAPI route schemas of /v1/turns whose descriptions and content types outgrow a route file:
 * starting a turn (JSON, SSE or wait) and reading its events (JSON page or SSE stream).
 */
import { Type } from '@sinclair/typebox'
import { Problem, TurnIdParams } from './common.js'
import {
  EventsHeaders, EventsPage, EventsQuery, Turn, TurnAccepted, TurnEventStream, TurnRequest, TurnStartQuery
} from './turn.js'

export const StartTurnRoute = {
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

export const TurnEventsRoute = {
  summary: 'Replay a turn\'s events after a seq, or stream them',
  description: 'JSON by default: the retained events after `after_seq`. With `Accept: text/event-stream`: server-sent events, ' +
    'replay then live (`id:` = seq), resuming after the `Last-Event-ID` header when given (it wins over `after_seq`), a comment ' +
    'line every `server.sse_keepalive_ms`, ending after the terminal event; 204 when the turn has ended and nothing is left to send. ' +
    'The headers go out at once even when nothing is to be sent yet (a resume point at or past the turn\'s last seq), and such a ' +
    'stream ends when the turn does. A cursor that is not an integer from 0 to 2^53 - 1 is 400 `INVALID_REQUEST`. ' +
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
