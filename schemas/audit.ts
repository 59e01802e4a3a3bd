/** GET /v1/audit: a tenant's hash-chained audit as JSON Lines, paginated by seq (decision 0213). */
import { Type, type Static } from '@sinclair/typebox'

export const MAX_AUDIT_PAGE = 1000

export const AuditQuery = Type.Object({
  format: Type.Literal('jsonl', { default: 'jsonl', description: 'JSON Lines: one entry per line, oldest first' }),
  after: Type.Integer({ minimum: 0, default: 0, description: 'Entries with a larger seq; 0 from the chain\'s start' }),
  limit: Type.Integer({ minimum: 1, maximum: MAX_AUDIT_PAGE, default: MAX_AUDIT_PAGE })
}, { additionalProperties: false })
export type AuditQuery = Static<typeof AuditQuery>
