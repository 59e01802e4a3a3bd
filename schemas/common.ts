import { Type, type Static } from '@sinclair/typebox'

/** Client-chosen ids (session ids, idempotency keys): printable, bounded, safe in logs and URLs. */
export const ClientId = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$' })

/** Server-minted opaque ids. */
export const OpaqueId = Type.String({ minLength: 1, maxLength: 128 })

export const ToolName = Type.String({ minLength: 1, maxLength: 128 })

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
