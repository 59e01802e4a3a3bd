import { test } from 'node:test'
import assert from 'node:assert/strict'
import { displayArguments, visibleText } from '../../src/approval/display.js'
import { summarizeArgs } from '../../src/approval/summary.js'
import { scrubValue } from '../../src/core/security/redact.js'

const KV_DECEPTION = 'echo \'password="\'; touch PWN_KV; echo \'"\''
const URL_DECEPTION = 'echo http://u:$(touch${IFS}PWN_URL)@example.com'

test('the password-assignment deception is shown to the approver exactly, touch included', () => {
  assert.deepEqual(displayArguments({ command: KV_DECEPTION }), [{ name: 'command', value: KV_DECEPTION }])
})

test('the URL-password deception is shown to the approver exactly, touch included', () => {
  assert.deepEqual(displayArguments({ command: URL_DECEPTION }), [{ name: 'command', value: URL_DECEPTION }])
})

test('the audit record of both deceptions stays scrubbed', () => {
  assert.doesNotMatch(summarizeArgs(scrubValue({ command: KV_DECEPTION })), /touch PWN_KV/)
  assert.doesNotMatch(summarizeArgs(scrubValue({ command: URL_DECEPTION })), /PWN_URL/)
})

test('a secret that is a plain token is masked for the approver too', () => {
  const [arg] = displayArguments({ command: 'curl -H "Authorization: Bearer abcdefgh12345678" https://api.example.com' })
  assert.equal(arg?.value, 'curl -H "Authorization: Bearer abcd*[REDACTED]" https://api.example.com')
})

test('a plain-token value of a credential-named argument is hidden, any other is shown', () => {
  assert.deepEqual(displayArguments({ password: 'hunter2hunter2', token: 'a b; touch x' }), [
    { name: 'password', value: '[REDACTED]' },
    { name: 'token', value: 'a b; touch x' }
  ])
})

test('a long value is shown whole, its space-padded tail included', () => {
  const command = `ls${' '.repeat(500)}&& touch PWN_TAIL`
  assert.equal(displayArguments({ command })[0]?.value, command)
})

test('bidi overrides, isolates, marks and zero-width characters become escapes', () => {
  const text = 'a\u202Ab\u202Bc\u202Cd\u202De\u202Ef\u2066g\u2067h\u2068i\u2069j\u200Ek\u200Fl\u061Cm\u200Bn\u200Co\u200Dp\u2060q\uFEFFr'
  assert.equal(visibleText(text, true),
    'a‹U+202A›b‹U+202B›c‹U+202C›d‹U+202D›e‹U+202E›f‹U+2066›g‹U+2067›h‹U+2068›i‹U+2069›j' +
    '‹U+200E›k‹U+200F›l‹U+061C›m‹U+200B›n‹U+200C›o‹U+200D›p‹U+2060›q‹U+FEFF›r')
})

test('C0 and C1 controls, odd spaces and tag characters become escapes; line breaks stay visible', () => {
  assert.equal(visibleText('a\u0000b\tc\rd\u001be\u0085f\u00A0g\u2028h\u{E0041}i', true),
    'a‹U+0000›b‹U+0009›c‹U+000D›d‹U+001B›e‹U+0085›f‹U+00A0›g‹U+2028›h‹U+E0041›i')
  assert.equal(visibleText('ls\ntouch x', true), 'ls⏎\ntouch x')
  assert.equal(visibleText('ls\ntouch x', false), 'ls⏎touch x')
})

test('the escape marks themselves are escaped, so an escape in the display is always real', () => {
  assert.equal(visibleText('‹U+202E› and ⏎', true), '‹U+2039›U+202E› and ‹U+23CE›')
})

test('printable text, emoji and non-Latin scripts pass through unchanged', () => {
  const text = 'grep -r "naïve café 🦀 日本語 Привет" src/'
  assert.equal(visibleText(text, true), text)
})

test('argument names are escaped too and path comes first', () => {
  assert.deepEqual(displayArguments({ z: 1, 'con\u202Etent': 'x', path: 'a.txt' }).map((a) => a.name), ['path', 'con‹U+202E›tent', 'z'])
})

test('structured values are shown as JSON with their plain-token secrets masked', () => {
  const [arg] = displayArguments({ headers: { Authorization: 'Bearer abcdefgh12345678', 'X-Api-Key': 'k1234567890abc', Note: 'x' } })
  assert.equal(arg?.value, '{"Authorization":"Bearer abcd*[REDACTED]","Note":"x","X-Api-Key":"[REDACTED]"}')
})
