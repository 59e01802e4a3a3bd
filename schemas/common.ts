import { Type, type Static } from '@sinclair/typebox'

/** Client-chosen ids (session ids, idempotency keys): printable, bounded, safe in logs and URLs. */
export const ClientId = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$' })

/** Server-minted opaque ids. */
export const OpaqueId = Type.String({ minLength: 1, maxLength: 128 })

export const ToolName = Type.String({ minLength: 1, maxLength: 128 })

/**
 * A position in a turn's event log (`after_seq`): every event up to this seq is the client's
 * already. Bounded so a cursor is always an exact integer: `1e400` (Infinity) and seqs past
 * 2^53 - 1 are refused, not rounded (docs/decisions/0200).
 */
export const EventCursor = Type.Integer({
  minimum: 0,
  maximum: Number.MAX_SAFE_INTEGER,
  description: 'Resume after this seq; past the turn\'s last seq, nothing is sent until its seqs pass it'
})

export const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339' })

export const Problem = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  code: Type.String({ description: 'Stable machine-readable error code, e.g. TURN_NOT_FOUND' }),
  detail: Type.Optional(Type.String())
}, { title: 'Problem' })
export type Problem = Static<typeof Problem>

export const TurnIdParams = Type.Object({ id: OpaqueId }, { additionalProperties: false })
