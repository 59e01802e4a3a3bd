/**
 * Row documents of the SQL stores. Records are kept as JSON text, not a JSON column type:
 * PostgreSQL's jsonb rejects `\u0000`, which tool output may legitimately contain.
 */
import type { ApprovalGrant } from '../../schemas/session.js'
import { LEGACY_TENANT, type BusEnvelope } from '../core/envelope.js'
import { TERMINAL_TURN_STATUSES, type SessionRecord, type TurnRecord } from './store.js'

export function encodeDoc (value: SessionRecord | TurnRecord | BusEnvelope): string {
  return JSON.stringify(value)
}

/** Records written before command grants listed tool grants as bare names. */
export function decodeSession (doc: string): SessionRecord {
  const session = JSON.parse(doc) as Omit<SessionRecord, 'always_allowed'> & { always_allowed: Array<ApprovalGrant | string> }
  return { ...session, always_allowed: session.always_allowed.map((g) => typeof g === 'string' ? { tool: g } : g) }
}

export function decodeTurn (doc: string): TurnRecord {
  const turn = JSON.parse(doc) as TurnRecord
  // Records written before pending approvals were tracked have none.
  turn.pending_approvals ??= []
  return turn
}

export function decodeEnvelope (doc: string): BusEnvelope {
  const envelope = JSON.parse(doc) as BusEnvelope
  // Stored before sessions were qualified by their tenant.
  envelope.tenant ??= LEGACY_TENANT
  return envelope
}

/** When a terminal turn finished, for event pruning; null while it runs. */
export function finishedMs (turn: TurnRecord): number | null {
  if (!TERMINAL_TURN_STATUSES.has(turn.status)) return null
  const t = Date.parse(turn.updated_at)
  return Number.isFinite(t) ? t : Date.now()
}

/** Leases that expired this long ago are forgotten; their turns are orphans either way. */
export const LEASE_FORGET_MS = 86_400_000
