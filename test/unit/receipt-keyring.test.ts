import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { ConfigError, loadConfig } from '../../src/core/config.js'
import { ReceiptKeyring, receiptKeyring } from '../../src/receipts/keyring.js'

const INPUT = { turnId: 'turn_1', callId: 'c1', tool: 'file_read', arguments: { path: 'a' }, output: 'x' }
const SECRET = randomBytes(32)

function configured (keys: unknown): ReturnType<typeof loadConfig> {
  return loadConfig({ env: {}, overrides: { store: { kind: 'memory' }, receipts: { keys } } })
}

test('two keyrings with the same master key derive the same per-turn key, and another turn gets another key', () => {
  const a = new ReceiptKeyring([{ id: 'k1', secret: SECRET }])
  const b = new ReceiptKeyring([{ id: 'k1', secret: Buffer.from(SECRET) }])
  const signed = a.forNewTurn('turn_1').key.sign(INPUT)
  assert.equal(b.keyFor('turn_1', 'k1')?.verify(signed, INPUT), true)
  assert.equal(b.keyFor('turn_2', 'k1')?.verify(signed, { ...INPUT }), false)
})

test('the first listed key signs new turns and an unlisted key id has no key', () => {
  const ring = new ReceiptKeyring([{ id: 'new', secret: randomBytes(32) }, { id: 'old', secret: SECRET }])
  assert.equal(ring.forNewTurn('turn_1').keyId, 'new')
  assert.notEqual(ring.keyFor('turn_1', 'old'), null)
  assert.equal(ring.keyFor('turn_1', 'gone'), null)
})

test('no configured key gives a process-own key id that another process does not know', () => {
  const a = receiptKeyring(configured([]), {})
  const b = receiptKeyring(configured([]), {})
  assert.match(a.currentId, /^process-/)
  assert.equal(b.keyFor('turn_1', a.currentId), null)
})

test('a configured key whose variable is unset, too short or not base64, or an id listed twice, is a configuration error', () => {
  const keys = [{ id: 'k1', secret_env: 'K1' }]
  const unset = (err: unknown): boolean => err instanceof ConfigError && /K1 is not set/.test(err.message)
  assert.throws(() => receiptKeyring(configured(keys), {}), unset)
  assert.throws(() => receiptKeyring(configured(keys), { K1: randomBytes(16).toString('base64') }), /at least 32 random bytes/)
  assert.throws(() => receiptKeyring(configured(keys), { K1: 'not base64 at all!'.repeat(4) }), /base64/)
  const twice = [{ id: 'k1', secret_env: 'K1' }, { id: 'k1', secret_env: 'K2' }]
  assert.throws(() => receiptKeyring(configured(twice), { K1: SECRET.toString('base64'), K2: SECRET.toString('base64') }), /listed twice/)
  assert.equal(receiptKeyring(configured(keys), { K1: SECRET.toString('base64url') }).currentId, 'k1')
})
