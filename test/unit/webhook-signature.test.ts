import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Webhook } from 'standardwebhooks'
import { signWebhook, newWebhookMessageId } from '../../src/core/security/webhook-signature.js'

const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

test('a signed message verifies with the standardwebhooks library', () => {
  const body = JSON.stringify({ type: 'approval.requested', data: { request_id: 'r1' } })
  const headers = signWebhook({ id: newWebhookMessageId(), timestampSeconds: Date.now() / 1000, body, secret })
  const verified = new Webhook(secret).verify(body, { ...headers })
  assert.deepEqual(verified, JSON.parse(body))
})

test('a changed body does not verify', () => {
  const headers = signWebhook({ id: 'msg_1', timestampSeconds: Date.now() / 1000, body: '{"a":1}', secret })
  assert.throws(() => new Webhook(secret).verify('{"a":2}', { ...headers }))
})

test('the signature matches the Standard Webhooks test vector', () => {
  // The vector from the specification's reference libraries: id, timestamp, body and secret below.
  const headers = signWebhook({
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestampSeconds: 1614265330,
    body: '{"test": 2432232314}',
    secret
  })
  assert.equal(headers['webhook-signature'], 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=')
})
