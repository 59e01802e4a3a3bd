/**
 * Keyset pagination of the list endpoints: a cursor names the (time, id) of the last item a page
 * showed, and the next page starts strictly after it. Opaque to clients (base64url JSON), checked
 * on the way in so a forged cursor is a typed error, never a query with odd input.
 */
import { TollgateError } from '../core/errors.js'
import type { PageKey } from '../store/store.js'

export { newestFirst } from '../store/store.js'

export function encodeCursor (key: PageKey): string {
  return Buffer.from(JSON.stringify([key.at, key.id]), 'utf8').toString('base64url')
}

export function decodeCursor (cursor: string | undefined): PageKey | undefined {
  if (cursor === undefined) return undefined
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    value = null
  }
  if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'string' || typeof value[1] !== 'string') {
    throw new TollgateError('INVALID_REQUEST', 'cursor is not a next_cursor this gateway issued')
  }
  return { at: value[0], id: value[1] }
}

/** Items fetched as `limit + 1` in page order: the page, and the cursor of the next one if there is more. */
export function pageOf<T> (fetched: T[], limit: number, keyOf: (item: T) => PageKey): { items: T[], next_cursor: string | null } {
  const items = fetched.slice(0, limit)
  const last = items.at(-1)
  return { items, next_cursor: fetched.length > limit && last !== undefined ? encodeCursor(keyOf(last)) : null }
}
