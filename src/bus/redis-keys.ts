/**
 * Redis names of the bus, all under one prefix so deployments (and tests) can share a server.
 * A turn's stream uses the entry id `0-<seq>`: Redis itself then refuses a duplicate or an
 * out-of-order seq, and a range by seq is a range by id.
 */
import type { BusEnvelope } from './bus.js'

export class RedisKeys {
  constructor (readonly prefix: string) {}

  stream (turnId: string): string {
    return `${this.prefix}log:${turnId}`
  }

  turnChannel (turnId: string): string {
    return `${this.prefix}t:${turnId}`
  }

  sessionChannel (sessionId: string): string {
    return `${this.prefix}s:${sessionId}`
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

/** Parses a bus message or stream entry; anything malformed is dropped (null), never thrown. */
export function parseEnvelope (text: string): BusEnvelope | null {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return null
  }
  if (typeof value !== 'object' || value === null) return null
  const e = value as Partial<BusEnvelope>
  if (typeof e.turn_id !== 'string' || typeof e.session_id !== 'string' || typeof e.ts !== 'string') return null
  if (typeof e.seq !== 'number' || !Number.isInteger(e.seq) || e.seq < 1) return null
  if (typeof e.event !== 'object' || e.event === null || typeof (e.event as { kind?: unknown }).kind !== 'string') return null
  return value as BusEnvelope
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
