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

test('long values are never cut, so a padded tail stays in the record', () => {
  const command = `echo hi${' '.repeat(200)}; touch PWN`
  assert.equal(summarizeArgs({ command }), `command: ${command}`)
  assert.equal(summarizeArgs({ content: '🦀'.repeat(120) }), `content: ${'🦀'.repeat(120)}`)
})

test('control, bidi and zero-width characters and line breaks are shown as escapes', () => {
  assert.equal(summarizeArgs({ command: 'ls\u202E txt.exe\u200B\nrm -rf x\u0007' }), 'command: ls‹U+202E› txt.exe‹U+200B›⏎rm -rf x‹U+0007›')
  assert.equal(summarizeArgs({ 'na\u2066me': 1 }), 'na‹U+2066›me: 1')
})

test('non-string values are JSON-encoded with sorted keys', () => {
  assert.equal(summarizeArgs({ opts: { b: 2, a: [1, 'x'] }, force: true, n: null }), 'force: true, n: null, opts: {"a":[1,"x"],"b":2}')
})

test('keys whose value is undefined are left out', () => {
  assert.equal(summarizeArgs({ a: undefined, b: 'kept' }), 'b: kept')
})

test('non-object args are summarised as their whole JSON text', () => {
  assert.equal(summarizeArgs('just a string'), '"just a string"')
  assert.equal(summarizeArgs([1, 2]), '[1,2]')
  assert.equal(summarizeArgs(null), 'null')
  assert.equal(summarizeArgs('z'.repeat(300)), `"${'z'.repeat(300)}"`)
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
