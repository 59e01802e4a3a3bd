/**
 * One error family for the whole gateway. Every failure a client can see carries a stable `code`
 * from the catalogue below; the HTTP error handler (app/http-errors.ts) turns it into problem JSON
 * and the WebSocket transport (transport/ws-socket.ts) into an `error` frame, both taking status
 * and message from the error, which took them from the catalogue.
 */

/**
 * The error catalogue, like fastify's lib/errors.js: each stable wire code is defined once, with its
 * HTTP status and its default message. A call site passes its own message only when it adds facts
 * (a limit, a name); otherwise it throws `new TollgateError(CODE)` and the text comes from here.
 * Codes and statuses are public (problem JSON, WS `error` frames); never renumber or rename them.
 */
export const ERRORS = {
  INVALID_REQUEST: { status: 400, message: 'the request does not match the schema' },
  INVALID_FRAME: { status: 400, message: 'frame must be a JSON object' },
  INVALID_JSON: { status: 400, message: 'the body is not valid JSON' },
  UNKNOWN_FRAME_TYPE: { status: 400, message: 'unknown frame type' },
  UNKNOWN_AGENT: { status: 400, message: 'unknown agent' },
  UNKNOWN_TOOL: { status: 400, message: 'tools.allow names a tool this agent does not have' },
  INVALID_DECISION: { status: 400, message: 'decision "edit" needs a replacement text' },
  CLIENT_TOOL_CONFLICT: { status: 400, message: 'client_tools names a tool the gateway has, or one name twice' },
  INVALID_CRON: { status: 400, message: 'the cron expression cannot be read' },
  INVALID_TIME_ZONE: { status: 400, message: 'the time zone is not an IANA time zone this gateway knows' },
  CONNECTION_NOT_FOUND: { status: 400, message: 'owner_connection is not a live WebSocket connection of this principal' },
  SUBPROTOCOL_REQUIRED: { status: 400, message: 'offer the WebSocket subprotocol (Sec-WebSocket-Protocol)' },
  UNAUTHENTICATED: { status: 401, message: 'authentication required' },
  TOKEN_INVALID: { status: 401, message: 'the bearer token is not acceptable' },
  TOKEN_EXPIRED: { status: 401, message: 'the bearer token has expired' },
  FORBIDDEN: { status: 403, message: 'this session belongs to another principal' },
  BUDGET_EXCEEDED: { status: 402, message: 'a spending budget is used up' },
  AGENT_FORBIDDEN: { status: 403, message: 'this principal may not use this agent' },
  ORIGIN_NOT_ALLOWED: { status: 403, message: 'this Origin may not open a WebSocket here' },
  NOT_FOUND: { status: 404, message: 'no such route' },
  TURN_NOT_FOUND: { status: 404, message: 'no turn with this id' },
  SESSION_NOT_FOUND: { status: 404, message: 'no session with this id' },
  APPROVAL_NOT_FOUND: { status: 404, message: 'no pending approval request with this id' },
  SCHEDULE_NOT_FOUND: { status: 404, message: 'no schedule with this id' },
  TOOL_CALL_NOT_WAITING: { status: 404, message: 'no client tool call of this turn waits for a result with this call_id' },
  DELIVERY_NOT_FOUND: { status: 404, message: 'no webhook delivery with this id' },
  REQUEST_TIMEOUT: { status: 408, message: 'the request did not arrive in time' },
  TURN_NOT_RUNNING: { status: 409, message: 'the turn is not running' },
  APPROVAL_ALREADY_RESOLVED: { status: 409, message: 'this approval request was already resolved' },
  APPROVAL_EXPIRED: { status: 409, message: 'this approval request expired unanswered; the call was denied' },
  APPROVAL_CANCELLED: { status: 409, message: 'the turn of this approval request was cancelled' },
  DELIVERY_NOT_FAILED: { status: 409, message: 'only a failed webhook delivery can be retried' },
  SESSION_BUSY: { status: 409, message: 'another turn of this session is still running' },
  STEERING_CLOSED: { status: 409, message: 'the turn has ended or is ending: it takes no more messages' },
  TOO_MANY_SCHEDULES: { status: 409, message: 'this principal has as many schedules as it may have' },
  IDEMPOTENCY_CONFLICT: { status: 409, message: 'this idempotency_key was used with a different request' },
  REPLAY_GAP: { status: 410, message: 'these events are no longer retained; refetch the turn' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'the body is too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'unsupported content-type; send application/json' },
  HOST_NOT_ALLOWED: { status: 421, message: 'this gateway does not serve the requested host' },
  UPGRADE_REQUIRED: { status: 426, message: 'this route speaks WebSocket only: send an Upgrade: websocket request' },
  RATE_LIMITED: { status: 429, message: 'too many frames; slow down' },
  TOO_MANY_TURNS: { status: 429, message: 'too many turns are running; retry later' },
  TOO_MANY_SUBSCRIPTIONS: { status: 429, message: 'too many subscriptions on this socket' },
  STEERING_QUEUE_FULL: { status: 429, message: 'too many messages wait for this turn\'s next model call' },
  HEADERS_TOO_LARGE: { status: 431, message: 'the request headers are too large' },
  INTERNAL: { status: 500, message: 'internal error' },
  PROVIDER_ERROR: { status: 502, message: 'the model provider answered with an error' },
  PROVIDER_UNAVAILABLE: { status: 502, message: 'the model provider could not be reached' },
  PROVIDER_BAD_RESPONSE: { status: 502, message: 'the model provider answered with something unreadable' },
  PROVIDER_TIMEOUT: { status: 504, message: 'the model provider did not answer in time' },
  SHUTTING_DOWN: { status: 503, message: 'the gateway is shutting down' },
  NOT_READY: { status: 503, message: 'the store is unavailable; retry later' },
  AUTH_UNAVAILABLE: { status: 503, message: 'tokens cannot be verified right now; retry later' }
} as const satisfies Record<string, { status: number, message: string }>

export type ErrorCode = keyof typeof ERRORS

export function isErrorCode (code: string): code is ErrorCode {
  return Object.hasOwn(ERRORS, code)
}

/**
 * `Retry-After` seconds of each 429 over HTTP: a hint, not a promise. A turn slot frees when some
 * running turn ends, which usually takes seconds; a frame rate window refills within a second.
 */
export const RETRY_AFTER_S: Readonly<Partial<Record<ErrorCode, number>>> = {
  TOO_MANY_TURNS: 5,
  RATE_LIMITED: 1,
  TOO_MANY_SUBSCRIPTIONS: 1
}
export const DEFAULT_RETRY_AFTER_S = 1

export interface TollgateErrorOptions {
  detail?: string
  cause?: unknown
}

export class TollgateError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly detail: string | undefined

  /** The message defaults to the catalogue's text for `code`; give one only when it adds facts. */
  constructor (code: ErrorCode, message?: string | TollgateErrorOptions, options: TollgateErrorOptions = {}) {
    if (typeof message === 'object') options = message
    super(typeof message === 'string' ? message : ERRORS[code].message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'TollgateError'
    this.code = code
    this.status = ERRORS[code].status
    this.detail = options.detail
  }
}

/** Terminal failures of a turn's loop: not client mistakes, so they carry no HTTP status. */
export const TURN_FAILURE_CODES = [
  'TOOL_LOOP_CANCELLED',
  'REPEATED_PROMPT_REQUIRED_CALL',
  'LOOP_DETECTED',
  'IDENTICAL_OUTPUT_LOOP',
  'MAX_ITERATIONS',
  'MALFORMED_TOOL_PROTOCOL',
  'EMPTY_COMPLETION',
  'PROVIDER_ERROR',
  'PROVIDER_UNAVAILABLE',
  'PROVIDER_BAD_RESPONSE',
  'PROVIDER_TIMEOUT',
  'TURN_TIMEOUT',
  'BUDGET_EXCEEDED',
  'INTERRUPTED',
  'INTERNAL'
] as const

export type TurnFailureCode = typeof TURN_FAILURE_CODES[number]

export class TurnFailure extends Error {
  readonly code: TurnFailureCode

  constructor (code: TurnFailureCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'TurnFailure'
    this.code = code
  }
}

export function isTollgateError (err: unknown): err is TollgateError {
  return err instanceof TollgateError
}

export interface Problem {
  type: string
  title: string
  status: number
  code: string
  detail?: string
}

export function toProblem (err: TollgateError): Problem {
  const problem: Problem = {
    type: `https://tollgate.dev/problems/${err.code.toLowerCase().replaceAll('_', '-')}`,
    title: err.message,
    status: err.status,
    code: err.code
  }
  if (err.detail !== undefined) problem.detail = err.detail
  return problem
}
