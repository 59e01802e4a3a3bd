import { test } from 'node:test'
import assert from 'node:assert/strict'
import { scrubLogLine } from '../../src/core/security/log-scrub.js'
import { captureLogs } from '../helpers/log-capture.js'

test('a log line without anything secret-looking is returned as the same string', () => {
  const line = '{"level":30,"time":1,"msg":"turn finished","turn_id":"turn_1"}\n'
  assert.equal(scrubLogLine(line), line)
})

test('a credential inside a log message is masked and the line stays valid JSON', () => {
  const line = `${JSON.stringify({ level: 30, msg: 'calling with Authorization: Bearer abcdefgh12345678 and "quotes"' })}\n`
  const out = scrubLogLine(line)
  assert.ok(out.endsWith('\n'))
  const parsed = JSON.parse(out) as { msg: string }
  assert.equal(parsed.msg, 'calling with Authorization: Bearer abcd*[REDACTED] and "quotes"')
})

test('values of credential-named keys are replaced at any depth', () => {
  const out = JSON.parse(scrubLogLine(JSON.stringify({ args: { nested: { password: 'pw', api_key: 12345 } }, label: 'x' }))) as Record<string, any>
  assert.deepEqual(out, { args: { nested: { password: '[REDACTED]', api_key: '[REDACTED]' } }, label: 'x' })
})

test('a URL password is masked without breaking the surrounding JSON', () => {
  const out = JSON.parse(scrubLogLine(JSON.stringify({ a: 'postgres://app:s3cr3tpass@db/x', b: 'z@w' }))) as Record<string, string>
  assert.deepEqual(out, { a: 'postgres://app:****@db/x', b: 'z@w' })
})

test('a line that is not JSON is scrubbed as text', () => {
  assert.equal(scrubLogLine('token=abcdefgh12345678\n'), 'token=abcd*[REDACTED]\n')
})

test('the gateway logger scrubs what a child logger writes, including error messages', () => {
  const logs = captureLogs('info')
  logs.logger.child({ turn_id: 't1' }).error({ err: new Error('upstream said api_key=sk-live0123456789abcdefghij') }, 'tool failed')
  assert.ok(!logs.text().includes('sk-live0123456789abcdefghij'))
  const [line] = logs.lines()
  assert.equal(line?.turn_id, 't1')
  assert.match(String(line?.err?.message), /api_key=sk-l\*\[REDACTED\]/)
})

test('the gateway logger still applies the header redaction paths', () => {
  const logs = captureLogs('info')
  logs.logger.info({ req: { headers: { authorization: 'Basic dXNlcjpwYXNz' } } }, 'request')
  assert.equal(logs.lines()[0]?.req?.headers?.authorization, '[REDACTED]')
})
