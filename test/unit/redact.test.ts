import { test } from 'node:test'
import assert from 'node:assert/strict'
import { isSecretKeyName, scrubText, scrubValue } from '../../src/core/security/redact.js'

test('a quoted JSON credential keeps its key, punctuation and first four characters', () => {
  assert.equal(scrubText('{"password": "hunter2hunter2"}'), '{"password": "hunt*[REDACTED]"}')
})

test('a colon-separated bare credential keeps its punctuation', () => {
  assert.equal(scrubText('api_key: abcdef123456 ok'), 'api_key: abcd*[REDACTED] ok')
})

test('an equals-separated quoted credential keeps its quotes', () => {
  assert.equal(scrubText('secret="QWxhZGRpbjpvcGVu/IHNlc2FtZQ=="'), 'secret="QWxh*[REDACTED]"')
})

test('an equals-separated bare base64 credential is scrubbed up to the next space', () => {
  assert.equal(scrubText('token=QWxh+GRpbjpvcGVu/IHNlc2FtZQ== next=public'), 'token=QWxh*[REDACTED] next=public')
})

test('credential keys are matched case-insensitively and inside longer names', () => {
  assert.equal(scrubText('ACCESS_TOKEN=abcdefghijkl X-Api-Key: zyxwvutsrq'), 'ACCESS_TOKEN=abcd*[REDACTED] X-Api-Key: zyxw*[REDACTED]')
})

test('every listed credential key is scrubbed', () => {
  const keys = ['authorization', 'token', 'api_key', 'api-key', 'apikey', 'password', 'passwd', 'secret', 'user_key',
    'user-key', 'bearer', 'credential', 'set-cookie', 'set_cookie', 'cookie', 'private_key']
  for (const key of keys) {
    assert.equal(scrubText(`${key}=s3cr3tvalue99`), `${key}=s3cr*[REDACTED]`, key)
  }
})

test('values shorter than eight characters are left alone', () => {
  assert.equal(scrubText('password=short token: "tiny"'), 'password=short token: "tiny"')
})

test('a bearer token anywhere in text is scrubbed', () => {
  assert.equal(scrubText('curl -H "Authorization: Bearer abcdefghijklmnop" https://x'), 'curl -H "Authorization: Bearer abcd*[REDACTED]" https://x')
})

test('basic credentials in an Authorization header are scrubbed', () => {
  assert.equal(scrubText('Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=='), 'Proxy-Authorization: Basic QWxh*[REDACTED]')
})

test('the word basic in prose is left alone', () => {
  assert.equal(scrubText('a basic understanding of authorization basics'), 'a basic understanding of authorization basics')
})

test('a JWT-looking string is scrubbed to its first four characters', () => {
  const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'
  assert.equal(scrubText(`got ${jwt} back`), 'got eyJh*[REDACTED] back')
})

test('common API key shapes are scrubbed wherever they appear', () => {
  const input = 'openai sk-proj-abcdefghijklmnop1234 github ghp_abcdefghijklmnopqrstuvwxyz0123456789 ' +
    'pat github_pat_11ABCDEFG0123456789_abcdefghij slack xoxb-1234567890-abcdefghij aws AKIAIOSFODNN7EXAMPLE'
  assert.equal(scrubText(input),
    'openai sk-p*[REDACTED] github ghp_*[REDACTED] pat gith*[REDACTED] slack xoxb*[REDACTED] aws AKIA*[REDACTED]')
})

test('a password in URL userinfo is masked while the user and host stay', () => {
  assert.equal(scrubText('clone https://alice:s3cret@git.example.com/repo.git'), 'clone https://alice:****@git.example.com/repo.git')
})

test('a URL with a port and no userinfo is untouched', () => {
  assert.equal(scrubText('see https://example.com:8443/path?q=1'), 'see https://example.com:8443/path?q=1')
})

test('receipt tokens are never scrubbed even when they contain key-like shapes', () => {
  const receipt = 'zc-receipt-1711547700-sk-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcd'
  const text = `[receipt: ${receipt}] token=${receipt} tg-receipt-1-AKIAIOSFODNN7EXAMPLE`
  assert.equal(scrubText(text), text)
})

test('the spl-token of a Solana Pay link is not treated as a credential', () => {
  const url = 'solana:7RJWhvQBQPEjJmki5fhBboGBWRJhmcFkMvrr4Fu3tMSJ?amount=25&spl-token=EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'
  assert.equal(scrubText(url), url)
})

test('text without credentials is returned unchanged', () => {
  const text = 'Listed 12 files in /tmp; tokens used: 4096; the secret of comedy is timing.'
  assert.equal(scrubText(text), text)
})

test('planted secrets of every kind are removed while the surrounding text survives', () => {
  const openAiKey = 'sk-live-9f8e7d6c5b4a3210ZYXW'
  const bearer = 'q1w2e3r4t5y6u7i8o9p0'
  const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJlLXBhcnQtMTIz'
  const password = 'Tr0ub4dor.3horse+staple'
  const input = `Step 1 used key ${openAiKey} to call the API.\n` +
    `Step 2 sent Authorization: Bearer ${bearer} upstream.\n` +
    `Step 3 received session ${jwt} from the server.\n` +
    `Step 4 logged in with password=${password} and finished.`
  const scrubbed = scrubText(input)
  for (const secret of [openAiKey, bearer, jwt, password]) {
    assert.equal(scrubbed.includes(secret), false, `leaked ${secret}`)
    assert.equal(scrubbed.includes(secret.slice(4, 10)), false, `leaked the middle of ${secret}`)
    assert.equal(scrubbed.includes(secret.slice(-6)), false, `leaked the end of ${secret}`)
  }
  for (const context of ['Step 1 used key ', ' to call the API.', 'Step 2 sent Authorization: Bearer ', ' upstream.',
    'Step 3 received session ', ' from the server.', 'Step 4 logged in with password=', ' and finished.']) {
    assert.equal(scrubbed.includes(context), true, `lost "${context}"`)
  }
  assert.equal(scrubbed.split('*[REDACTED]').length - 1, 4)
})

test('secret key names are detected by lower-cased substring', () => {
  for (const key of ['client_secret', 'DB_PASSWORD', 'passwd', 'refreshToken', 'X-Api-Key', 'api_key', 'apikey',
    'Authorization', 'bearer', 'ssh_private_key', 'privateKey', 'private-key', 'credentials', 'Cookie']) {
    assert.equal(isSecretKeyName(key), true, key)
  }
  for (const key of ['path', 'command', 'content', 'spl-token', 'url']) {
    assert.equal(isSecretKeyName(key), false, key)
  }
})

test('structured scrubbing replaces whole values under credential-named keys', () => {
  const input = { body: { access_token: 'sk-live-abcdef0123456789', nested: { password: { a: 1 } }, status: 'ok' }, count: 3 }
  assert.deepEqual(scrubValue(input), { body: { access_token: '[REDACTED]', nested: { password: '[REDACTED]' }, status: 'ok' }, count: 3 })
})

test('structured scrubbing runs other strings through the text scrubber', () => {
  assert.deepEqual(scrubValue({ log: ['ran with token=abcdefghijkl'] }), { log: ['ran with token=abcd*[REDACTED]'] })
})

test('structured scrubbing leaves absent credential values as they are', () => {
  assert.deepEqual(scrubValue({ token: null, secret: undefined }), { token: null, secret: undefined })
})

test('structured scrubbing returns a copy and leaves the input untouched', () => {
  const input = { api_key: 'abcdefghijklmnop', items: [{ note: 'x' }] }
  const output = scrubValue(input) as typeof input
  assert.equal(input.api_key, 'abcdefghijklmnop')
  assert.notEqual(output.items, input.items)
})

test('structured scrubbing replaces a cycle with a marker', () => {
  const node: Record<string, unknown> = { name: 'root' }
  node.self = node
  assert.deepEqual(scrubValue(node), { name: 'root', self: '[Circular]' })
})

test('structured scrubbing does not mistake a repeated acyclic reference for a cycle', () => {
  const shared = { v: 1 }
  assert.deepEqual(scrubValue({ a: shared, b: shared }), { a: { v: 1 }, b: { v: 1 } })
})

test('structured scrubbing truncates containers nested deeper than twenty levels', () => {
  let deep: Record<string, unknown> = { leaf: true }
  for (let i = 0; i < 25; i++) deep = { child: deep }
  let cursor = scrubValue(deep) as Record<string, unknown>
  for (let level = 1; level <= 20; level++) cursor = cursor.child as Record<string, unknown>
  assert.equal(cursor.child, '[Truncated]')
})

test('structured scrubbing renders values with toJSON the way JSON would', () => {
  assert.deepEqual(scrubValue({ at: new Date(0) }), { at: '1970-01-01T00:00:00.000Z' })
})

test('a toJSON that returns its own object is applied once, not forever', () => {
  const selfish = { note: 'token=abcdefghijkl', toJSON () { return this } }
  const output = scrubValue({ selfish }) as { selfish: { note: string } }
  assert.equal(output.selfish.note, 'token=abcd*[REDACTED]')
})
