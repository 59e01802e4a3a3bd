/**
 * WebSocket client frames: parsed and validated against schemas/ws.ts (compiled once), so the
 * handlers only ever see well-formed frames. Failures carry the stable codes clients match on;
 * `errorFrame` is the one place a typed error becomes an `error` frame.
 */
import { Ajv, type ValidateFunction } from 'ajv'
import { ClientFrameSchemas, type ClientFrame, type ClientFrameType, type ServerFrame } from '../../schemas/ws.js'
import { TollgateError } from '../core/errors.js'

const ajv = new Ajv({ allErrors: false, strict: false, removeAdditional: false, coerceTypes: false })
const validators = new Map<string, ValidateFunction>(
  Object.entries(ClientFrameSchemas).map(([type, schema]) => [type, ajv.compile(schema)])
)

export function parseClientFrame (text: string): ClientFrame {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new TollgateError('INVALID_JSON', 'frame is not valid JSON')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TollgateError('INVALID_FRAME')
  }
  const type = (value as { type?: unknown }).type
  const validate = typeof type === 'string' ? validators.get(type) : undefined
  if (validate === undefined) {
    throw new TollgateError('UNKNOWN_FRAME_TYPE', `unknown frame type ${JSON.stringify(type ?? null).slice(0, 64)}`)
  }
  if (!validate(value)) {
    const e = validate.errors?.[0]
    const where = e === undefined || e.instancePath === '' ? 'frame' : e.instancePath.slice(1)
    const extra = e?.params !== undefined && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''
    throw new TollgateError('INVALID_FRAME', `${type as string}: ${where} ${e?.message ?? 'is invalid'}${extra}`)
  }
  return value as ClientFrame
}

export function frameRef (text: string): string | undefined {
  try {
    const ref = (JSON.parse(text) as { ref?: unknown }).ref
    return typeof ref === 'string' && ref.length <= 64 ? ref : undefined
  } catch {
    return undefined
  }
}

/**
 * The WS `error` frame for a typed error: the code and message the error took from the catalogue
 * (core/errors.ts), with its detail appended, as problem JSON carries them over HTTP.
 */
export function errorFrame (err: TollgateError, ref: string | undefined): Extract<ServerFrame, { type: 'error' }> {
  return { type: 'error', code: err.code, message: err.detail === undefined ? err.message : `${err.message}: ${err.detail}`, ...(ref === undefined ? {} : { ref }) }
}

export type { ClientFrameType }
