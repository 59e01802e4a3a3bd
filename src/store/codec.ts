/**
 * Row documents of the SQL stores. Records are kept as JSON text, not a JSON column type:
 * PostgreSQL's jsonb rejects `\u0000`, which tool output may legitimately contain.
 */
import type { BusEnvelope } from '../bus/bus.js'
import { TERMINAL_TURN_STATUSES, type SessionRecord, type TurnRecord } from './store.js'

export function encodeDoc (value: SessionRecord | TurnRecord | BusEnvelope): string {
  return JSON.stringify(value)
}

export function decodeSession (doc: string): SessionRecord {
  return JSON.parse(doc) as SessionRecord
}

export function decodeTurn (doc: string): TurnRecord {
  return JSON.parse(doc) as TurnRecord
}

export function decodeEnvelope (doc: string): BusEnvelope {
  return JSON.parse(doc) as BusEnvelope
}

/** When a terminal turn finished, for event pruning; null while it runs. */
export function finishedMs (turn: TurnRecord): number | null {
  if (!TERMINAL_TURN_STATUSES.has(turn.status)) return null
  const t = Date.parse(turn.updated_at)
  return Number.isFinite(t) ? t : Date.now()
}

/** Leases that expired this long ago are forgotten; their turns are orphans either way. */
export const LEASE_FORGET_MS = 86_400_000
