/**
 * Identifiers of stored records (turns, sessions): UUID version 7 (RFC 9562) — 48 bits of Unix
 * milliseconds, then 74 random bits. Time-ordered keys land at the right edge of the stores'
 * B-tree indexes, so the rows of turns running at the same time share pages: a commit dirties a
 * few pages instead of one random page per index and turn, and the WAL checkpoint copies those
 * few. The random part comes from a pooled buffer (one randomFillSync per 256 ids), as
 * crypto.randomUUID does for version 4.
 */
import { randomFillSync } from 'node:crypto'

const RANDOM_BYTES = 10
const POOL_IDS = 256
const pool = Buffer.alloc(RANDOM_BYTES * POOL_IDS)
let offset = pool.length

const VARIANT = ['8', '9', 'a', 'b']

/** A UUIDv7 string for `nowMs` (default: the current time). */
export function timeOrderedUuid (nowMs: number = Date.now()): string {
  if (offset === pool.length) {
    randomFillSync(pool)
    offset = 0
  }
  const r = pool.toString('hex', offset, offset + RANDOM_BYTES)
  offset += RANDOM_BYTES
  // 48-bit big-endian timestamp as 12 hex digits (Number is exact up to 2^53).
  const ts = Math.max(0, Math.floor(nowMs)).toString(16).padStart(12, '0').slice(-12)
  // Version 7 in the 13th digit, the RFC variant (10xx) in the 17th; the other 74 bits random.
  const variant = VARIANT[Number.parseInt(r.charAt(3), 16) & 3] ?? '8'
  return `${ts.slice(0, 8)}-${ts.slice(8, 12)}-7${r.slice(0, 3)}-${variant}${r.slice(4, 7)}-${r.slice(8, 20)}`
}
