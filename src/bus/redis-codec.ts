/**
 * What the Redis bus puts on the wire and reads back. Names all live under one prefix so
 * deployments (and tests) can share a server. A turn's stream uses the entry id `0-<seq>`:
 * Redis itself then refuses a duplicate or an out-of-order seq, and a range by seq is a range
 * by id. Everything read back is checked field by field; anything malformed is dropped (null).
 */
import { MAX_DENIAL_REASON_CHARS, MAX_REPLACEMENT_CHARS } from '../../schemas/approval.js'
import { MAX_MESSAGE_CHARS } from '../../schemas/turn.js'
import { LEGACY_TENANT } from '../core/envelope.js'
import { sessionKey } from '../core/tenancy.js'
import type { BusEnvelope, ControlMessage } from './bus.js'

const MAX_ID_CHARS = 256
const MAX_TEXT_CHARS = 4096
const DECISIONS = new Set(['yes', 'no', 'always', 'edit'])

export class RedisKeys {
  constructor (readonly prefix: string) {}

  stream (turnId: string): string {
    return `${this.prefix}log:${turnId}`
  }

  turnChannel (turnId: string): string {
    return `${this.prefix}t:${turnId}`
  }

  /** A session's live events: the session `sessionId` of `tenant`. */
  sessionChannel (tenant: string, sessionId: string): string {
    return `${this.prefix}s:${sessionKey(tenant, sessionId)}`
  }

  get controlChannel (): string {
    return `${this.prefix}control`
  }
}

export function entryId (seq: number): string {
  return `0-${seq}`
}

/** XADD answers this when the id is not above the stream's last: the event is already there. */
export function isDuplicateEntry (err: unknown): boolean {
  return err instanceof Error && err.message.includes('equal or smaller than the target stream top item')
}

function isText (v: unknown, max: number): v is string {
  return typeof v === 'string' && v.length <= max
}

function optionalText (v: unknown, max: number): boolean {
  return v === undefined || isText(v, max)
}

/** A JSON object (or array), or null for invalid JSON and scalars. */
function parseObject (text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null ? value as Record<string, unknown> : null
  } catch {
    return null
  }
}

function isSteered (v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false
  const s = v as Record<string, unknown>
  return [s.seq, s.n, s.queued].every((x) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0)
}

/** Parses a control-channel message; null when any field is missing, mistyped or oversized. */
export function parseControl (text: string): ControlMessage | null {
  const value = parseObject(text)
  if (value === null) return null
  const m = value
  const id = (k: string): boolean => isText(m[k], MAX_ID_CHARS)
  if (m.type === 'reply') {
    const ok = id('id') && id('to') && id('from') && typeof m.handled === 'boolean' &&
      optionalText(m.error, MAX_ID_CHARS) && optionalText(m.turn_id, MAX_ID_CHARS) && optionalText(m.status, MAX_ID_CHARS) &&
      (m.steered === undefined || isSteered(m.steered))
    return ok ? value as unknown as ControlMessage : null
  }
  const rpc = m.rpc as Record<string, unknown> | undefined
  if (rpc !== undefined && (typeof rpc !== 'object' || rpc === null || !isText(rpc.id, MAX_ID_CHARS) || !isText(rpc.from, MAX_ID_CHARS))) return null
  let ok = false
  if (m.type === 'cancel') ok = id('turn_id') && id('principal') && isText(m.reason, MAX_TEXT_CHARS)
  else if (m.type === 'watching') ok = id('turn_id') && id('session_id') && id('principal')
  else if (m.type === 'steer') ok = id('turn_id') && id('principal') && isText(m.message, MAX_MESSAGE_CHARS) && (m.steerer === undefined || m.steerer === true)
  else if (m.type === 'approval') {
    ok = id('request_id') && id('principal') && id('decided_by') && id('channel') &&
      typeof m.decision === 'string' && DECISIONS.has(m.decision) && optionalText(m.replacement, MAX_REPLACEMENT_CHARS) &&
      optionalText(m.reason, MAX_DENIAL_REASON_CHARS)
  }
  return ok ? value as unknown as ControlMessage : null
}

/** Parses a bus message or stream entry; anything malformed is dropped (null), never thrown. */
export function parseEnvelope (text: string): BusEnvelope | null {
  const value = parseObject(text)
  if (value === null) return null
  const e = value as Partial<BusEnvelope>
  if (typeof e.turn_id !== 'string' || typeof e.session_id !== 'string' || typeof e.ts !== 'string') return null
  // Absent: sent before sessions were qualified by their tenant (a turn that outlived an upgrade).
  if (e.tenant === undefined) e.tenant = LEGACY_TENANT
  else if (typeof e.tenant !== 'string') return null
  if (typeof e.seq !== 'number' || !Number.isInteger(e.seq) || e.seq < 1) return null
  if (typeof e.event !== 'object' || e.event === null || typeof (e.event as { kind?: unknown }).kind !== 'string') return null
  return e as BusEnvelope
}

/** Stream entries as ioredis returns them: `[id, [field, value, ...]]`. */
export function envelopesOf (entries: ReadonlyArray<[string, string[]]>): BusEnvelope[] {
  const out: BusEnvelope[] = []
  for (const [, fields] of entries) {
    const at = fields.indexOf('e')
    const text = at >= 0 ? fields[at + 1] : undefined
    const e = text === undefined ? null : parseEnvelope(text)
    if (e !== null) out.push(e)
  }
  return out
}
