import { test } from 'node:test'
import assert from 'node:assert/strict'
import { MAX_REPLACEMENT_BYTES, sanitizeReplacement, summarizeArgs } from '../../src/approval/summary.js'

test('an object summary lists each key with its value joined by commas', () => {
  assert.equal(summarizeArgs({ command: 'ls -la', cwd: '/tmp' }), 'command: ls -la, cwd: /tmp')
})

test('path comes first and the other keys follow in sorted order', () => {
  assert.equal(summarizeArgs({ old_string: 'foo', path: 'src/main.rs', new_string: 'bar' }),
    'path: src/main.rs, new_string: bar, old_string: foo')
})

test('values of secret-named keys are redacted', () => {
  assert.equal(summarizeArgs({ url: 'https://x', api_key: 'sk-abc', Authorization: 'Bearer t', password: 7 }),
    'Authorization: [redacted], api_key: [redacted], password: [redacted], url: https://x')
})

test('long string values are cut to 80 characters and an ellipsis', () => {
  assert.equal(summarizeArgs({ content: 'x'.repeat(200) }), `content: ${'x'.repeat(80)}…`)
})

test('a string of exactly 80 characters is not cut', () => {
  assert.equal(summarizeArgs({ content: 'y'.repeat(80) }), `content: ${'y'.repeat(80)}`)
})

test('truncation counts code points so emoji are never split', () => {
  assert.equal(summarizeArgs({ content: '🦀'.repeat(120) }), `content: ${'🦀'.repeat(80)}…`)
})

test('non-string values are JSON-encoded with sorted keys', () => {
  assert.equal(summarizeArgs({ opts: { b: 2, a: [1, 'x'] }, force: true, n: null }), 'force: true, n: null, opts: {"a":[1,"x"],"b":2}')
})

test('long non-string values are cut after JSON encoding', () => {
  const summary = summarizeArgs({ list: Array.from({ length: 100 }, (_, i) => i) })
  assert.equal(summary, `list: ${JSON.stringify(Array.from({ length: 100 }, (_, i) => i)).slice(0, 80)}…`)
})

test('keys whose value is undefined are left out', () => {
  assert.equal(summarizeArgs({ a: undefined, b: 'kept' }), 'b: kept')
})

test('non-object args are summarised as their JSON text', () => {
  assert.equal(summarizeArgs('just a string'), '"just a string"')
  assert.equal(summarizeArgs([1, 2]), '[1,2]')
  assert.equal(summarizeArgs(null), 'null')
})

test('non-object args are cut to 120 characters and an ellipsis', () => {
  assert.equal(summarizeArgs('z'.repeat(300)), `"${'z'.repeat(119)}…`)
})

test('replacement text loses control characters except newline, carriage return and tab', () => {
  assert.equal(sanitizeReplacement('ok\u0007line\nnext\ttab\u001b[31m'), 'okline\nnext\ttab[31m')
  assert.equal(sanitizeReplacement('a\r\nb\u0000c\u007fd\u009be'), 'a\r\nbcde')
})

test('replacement text within the byte cap is unchanged', () => {
  const text = 'é'.repeat(MAX_REPLACEMENT_BYTES / 2)
  assert.equal(sanitizeReplacement(text), text)
})

test('replacement text is capped at 65536 UTF-8 bytes on a character boundary', () => {
  const capped = sanitizeReplacement('a' + '€'.repeat(30000))
  assert.equal(MAX_REPLACEMENT_BYTES, 65536)
  assert.equal(Buffer.byteLength(capped, 'utf8'), 1 + 3 * 21845)
  assert.equal(capped, 'a' + '€'.repeat(21845))
})
