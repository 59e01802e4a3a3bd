/**
 * The error catalogue is the public contract of every refusal: these codes and statuses are on the
 * wire (problem JSON, WS `error` frames) and must never change by accident.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ERRORS, isErrorCode, TollgateError, toProblem } from '../../src/core/errors.js'
import { errorFrame } from '../../src/transport/frames.js'
import { remoteError } from '../../src/cluster/control.js'

const WIRE_STATUS = {
  INVALID_REQUEST: 400, INVALID_FRAME: 400, INVALID_JSON: 400, UNKNOWN_FRAME_TYPE: 400, UNKNOWN_AGENT: 400, UNKNOWN_TOOL: 400,
  INVALID_DECISION: 400, INVALID_CRON: 400, INVALID_TIME_ZONE: 400, CONNECTION_NOT_FOUND: 400, SUBPROTOCOL_REQUIRED: 400,
  CLIENT_TOOL_CONFLICT: 400,
  UNAUTHENTICATED: 401, TOKEN_INVALID: 401, TOKEN_EXPIRED: 401, BUDGET_EXCEEDED: 402,
  FORBIDDEN: 403, AGENT_FORBIDDEN: 403, ORIGIN_NOT_ALLOWED: 403,
  NOT_FOUND: 404, TURN_NOT_FOUND: 404, SESSION_NOT_FOUND: 404, APPROVAL_NOT_FOUND: 404, SCHEDULE_NOT_FOUND: 404, TOOL_CALL_NOT_WAITING: 404,
  DELIVERY_NOT_FOUND: 404,
  REQUEST_TIMEOUT: 408,
  TURN_NOT_RUNNING: 409, APPROVAL_ALREADY_RESOLVED: 409, APPROVAL_EXPIRED: 409, APPROVAL_CANCELLED: 409, DELIVERY_NOT_FAILED: 409,
  SESSION_BUSY: 409, STEERING_CLOSED: 409, TOO_MANY_SCHEDULES: 409, IDEMPOTENCY_CONFLICT: 409,
  REPLAY_GAP: 410, PAYLOAD_TOO_LARGE: 413, UNSUPPORTED_MEDIA_TYPE: 415, HOST_NOT_ALLOWED: 421, UPGRADE_REQUIRED: 426,
  RATE_LIMITED: 429, TOO_MANY_TURNS: 429, TOO_MANY_SUBSCRIPTIONS: 429, STEERING_QUEUE_FULL: 429, HEADERS_TOO_LARGE: 431,
  INTERNAL: 500, PROVIDER_ERROR: 502, PROVIDER_UNAVAILABLE: 502, PROVIDER_BAD_RESPONSE: 502, PROVIDER_TIMEOUT: 504,
  SHUTTING_DOWN: 503, NOT_READY: 503, AUTH_UNAVAILABLE: 503
}

test('every wire code keeps its status, and the catalogue holds no other code', () => {
  assert.deepEqual(Object.fromEntries(Object.entries(ERRORS).map(([code, e]) => [code, e.status])), WIRE_STATUS)
  for (const [code, entry] of Object.entries(ERRORS)) assert.notEqual(entry.message.trim(), '', `${code} has a default message`)
})

test('an error thrown with only its code carries the catalogue status and message into problem JSON and WS frames', () => {
  const err = new TollgateError('SESSION_BUSY')
  assert.deepEqual(toProblem(err), {
    type: 'https://tollgate.dev/problems/session-busy', title: 'another turn of this session is still running', status: 409, code: 'SESSION_BUSY'
  })
  assert.deepEqual(errorFrame(err, 'r1'), { type: 'error', code: 'SESSION_BUSY', message: 'another turn of this session is still running', ref: 'r1' })
  const detailed = new TollgateError('TOKEN_INVALID', { detail: 'bad signature' })
  assert.deepEqual([detailed.message, detailed.status, detailed.detail], ['the bearer token is not acceptable', 401, 'bad signature'])
  assert.deepEqual(errorFrame(detailed, undefined), { type: 'error', code: 'TOKEN_INVALID', message: 'the bearer token is not acceptable: bad signature' })
})

test('a message given at the call site replaces the default; the status still comes from the catalogue', () => {
  const err = new TollgateError('PAYLOAD_TOO_LARGE', 'the body exceeds 10 bytes', { detail: 'x' })
  assert.deepEqual([err.code, err.status, err.message, err.detail], ['PAYLOAD_TOO_LARGE', 413, 'the body exceeds 10 bytes', 'x'])
})

test('a peer instance\'s refusal is rebuilt from the catalogue; an unknown or unexpected code becomes INTERNAL', () => {
  assert.deepEqual([remoteError('TURN_NOT_FOUND').status, remoteError('TURN_NOT_FOUND').message], [404, 'no turn with this id'])
  assert.equal(remoteError('APPROVAL_ALREADY_RESOLVED').message, 'this approval request was already resolved')
  assert.equal(remoteError('SESSION_BUSY').code, 'INTERNAL')
  assert.equal(remoteError('NO_SUCH_CODE').code, 'INTERNAL')
  assert.equal(isErrorCode('toString'), false, 'inherited names are not codes')
})
