import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { canonicalJson, digest } from '../../src/core/json/canonical.js'

function sortedCopy (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedCopy)
  if (typeof value !== 'object' || value === null) return value
  const record = value as Record<string, unknown>
  return Object.fromEntries(Object.keys(record).sort().map((key) => [key, sortedCopy(record[key])]))
}

test('object keys are sorted at every level', () => {
  assert.equal(canonicalJson({ b: 1, a: { d: 2, c: 3 } }), '{"a":{"c":3,"d":2},"b":1}')
})

test('key insertion order does not change the output', () => {
  assert.equal(canonicalJson({ alpha: 1, beta: [1, { y: 2, x: 1 }] }), canonicalJson({ beta: [1, { x: 1, y: 2 }], alpha: 1 }))
})

test('arrays keep their order', () => {
  assert.equal(canonicalJson([3, 1, 2]), '[3,1,2]')
})

test('output is compact with no whitespace', () => {
  assert.equal(canonicalJson({ a: [1, 2], b: { c: 'x y' } }), '{"a":[1,2],"b":{"c":"x y"}}')
})

test('undefined properties are omitted and undefined array items become null', () => {
  assert.equal(canonicalJson({ a: undefined, b: 1, c: [undefined] }), '{"b":1,"c":[null]}')
})

test('non-finite numbers are encoded as null', () => {
  assert.equal(canonicalJson([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5]), '[null,null,null,1.5]')
})

test('strings are escaped exactly as JSON.stringify escapes them', () => {
  const tricky = 'quote " backslash \\ newline \n tab \t bell \u0007 emoji 🦀'
  assert.equal(canonicalJson({ s: tricky }), `{"s":${JSON.stringify(tricky)}}`)
})

test('keys are sorted by UTF-16 code unit order', () => {
  assert.equal(canonicalJson({ b: 1, B: 2, a: 3, é: 4 }), '{"B":2,"a":3,"b":1,"é":4}')
})

test('strings, numbers and booleans with the same text stay distinct', () => {
  const encodings = new Set([canonicalJson({ x: 1 }), canonicalJson({ x: '1' }), canonicalJson({ x: true }), canonicalJson({ x: 'true' })])
  assert.equal(encodings.size, 4)
})

test('values with toJSON are encoded through it like JSON.stringify does', () => {
  assert.equal(canonicalJson({ at: new Date(0) }), '{"at":"1970-01-01T00:00:00.000Z"}')
})

test('a bare undefined encodes as null', () => {
  assert.equal(canonicalJson(undefined), 'null')
})

test('a circular structure is rejected with a TypeError', () => {
  const loop: Record<string, unknown> = {}
  loop.self = loop
  assert.throws(() => canonicalJson(loop), TypeError)
})

test('a shared but acyclic reference is encoded at each place it appears', () => {
  const shared = { k: 1 }
  assert.equal(canonicalJson({ a: shared, b: shared }), '{"a":{"k":1},"b":{"k":1}}')
})

test('canonical JSON equals JSON.stringify of a recursively key-sorted copy', () => {
  const value = { z: [{ b: 2, a: 1 }, 'x', null], m: { y: false, x: 0.25 }, a: 'first' }
  assert.equal(canonicalJson(value), JSON.stringify(sortedCopy(value)))
})

test('digest is the lowercase sha256 hex of the UTF-8 text', () => {
  assert.equal(digest('héllo'), createHash('sha256').update(Buffer.from('héllo', 'utf8')).digest('hex'))
  assert.match(digest(''), /^[0-9a-f]{64}$/)
})
