import { test } from 'node:test'
import assert from 'node:assert/strict'
import { timeOrderedUuid } from '../../src/core/ids.js'

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

test('a time-ordered id is a UUID version 7 whose first 48 bits are the milliseconds given', () => {
  const at = Date.UTC(2026, 11, 3, 13, 0, 0, 123)
  const id = timeOrderedUuid(at)
  assert.match(id, UUID_V7)
  assert.equal(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16), at)
})

test('ids made in later milliseconds sort after earlier ones; ids of one millisecond differ in 74 random bits', () => {
  const ids = Array.from({ length: 20_000 }, (_, i) => timeOrderedUuid(1_700_000_000_000 + Math.floor(i / 100)))
  for (const id of ids) assert.match(id, UUID_V7)
  assert.equal(new Set(ids).size, ids.length)
  for (let i = 100; i < ids.length; i += 100) assert.ok((ids[i - 1] as string) < (ids[i] as string), `${ids[i - 1]} sorts before ${ids[i]}`)
  // Within one millisecond the order is random: not all 99 neighbours ascending.
  const sameMs = ids.slice(0, 100)
  assert.notDeepEqual(sameMs, [...sameMs].sort())
})
