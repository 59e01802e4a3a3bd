/**
 * One error family for the whole gateway. Every failure a client can see carries a stable `code`;
 * the route layer maps codes to HTTP status (problem JSON) or to a WS `error` frame.
 */

export const ERROR_STATUS = {
  INVALID_REQUEST: 400,
  INVALID_FRAME: 400,
  INVALID_JSON: 400,
  UNKNOWN_FRAME_TYPE: 400,
  UNKNOWN_AGENT: 400,
  UNKNOWN_TOOL: 400,
  INVALID_DECISION: 400,
  CONNECTION_NOT_FOUND: 400,
  SUBPROTOCOL_REQUIRED: 400,
  UNAUTHENTICATED: 401,
  TOKEN_INVALID: 401,
  TOKEN_EXPIRED: 401,
  FORBIDDEN: 403,
  ORIGIN_NOT_ALLOWED: 403,
  NOT_FOUND: 404,
  TURN_NOT_FOUND: 404,
  SESSION_NOT_FOUND: 404,
  APPROVAL_NOT_FOUND: 404,
  REQUEST_TIMEOUT: 408,
  TURN_NOT_RUNNING: 409,
  APPROVAL_ALREADY_RESOLVED: 409,
  SESSION_BUSY: 409,
  IDEMPOTENCY_CONFLICT: 409,
  REPLAY_GAP: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  HOST_NOT_ALLOWED: 421,
  UPGRADE_REQUIRED: 426,
  RATE_LIMITED: 429,
  TOO_MANY_TURNS: 429,
  TOO_MANY_SUBSCRIPTIONS: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL: 500,
  PROVIDER_ERROR: 502,
  PROVIDER_UNAVAILABLE: 502,
  PROVIDER_BAD_RESPONSE: 502,
  PROVIDER_TIMEOUT: 504,
  SHUTTING_DOWN: 503,
  NOT_READY: 503,
  AUTH_UNAVAILABLE: 503
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

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

export class TollgateError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly detail: string | undefined

  constructor (code: ErrorCode, message: string, options: { detail?: string, cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'TollgateError'
    this.code = code
    this.status = ERROR_STATUS[code]
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
