import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { canonicalJson, digest } from '../../src/core/json/canonical.js'
import { parseReceipt, ReceiptKey } from '../../src/receipts/keys.js'
import type { ReceiptInput } from '../../src/turn/context.js'

const KEY = Buffer.alloc(32, 7)
const NOW = 1_700_000_123_456
const INPUT: ReceiptInput = { turnId: 'turn_1', callId: 'call_1', tool: 'file_read', arguments: { path: 'notes.txt', limit: 10 }, output: 'hello' }

function signed (input: ReceiptInput = INPUT): string {
  return new ReceiptKey(KEY).sign(input, NOW)
}

test('a receipt has the documented format: prefix, unix seconds, 43 base64url characters', () => {
  assert.match(signed(), /^tg-receipt-1700000123-[A-Za-z0-9_-]{43}$/)
})

test('signing is deterministic for one key, input and second', () => {
  assert.equal(signed(), signed())
  assert.equal(new ReceiptKey(KEY).sign(INPUT, NOW + 500), signed(), 'the same second')
  assert.notEqual(new ReceiptKey(KEY).sign(INPUT, NOW + 1000), signed(), 'the next second')
})

test('the MAC is HMAC-SHA256 over the canonical JSON of the documented fields', () => {
  const message = canonicalJson({
    v: 1, turn_id: 'turn_1', call_id: 'call_1', tool: 'file_read',
    args_sha256: digest(canonicalJson(INPUT.arguments)), output_sha256: digest('hello'), ts: 1_700_000_123
  })
  const expected = createHmac('sha256', KEY).update(message).digest('base64url')
  assert.equal(signed(), `tg-receipt-1700000123-${expected}`)
})

test('argument key order does not change the receipt', () => {
  assert.equal(signed({ ...INPUT, arguments: { limit: 10, path: 'notes.txt' } }), signed())
})

test('a receipt verifies against the input it was made for', () => {
  assert.deepEqual(new ReceiptKey(KEY).check(signed(), INPUT), { valid: true })
  assert.equal(new ReceiptKey(KEY).verify(signed(), INPUT), true)
})

test('changing the tool name breaks verification', () => {
  assert.deepEqual(new ReceiptKey(KEY).check(signed(), { ...INPUT, tool: 'file_write' }), { valid: false, reason: 'mismatch' })
})

test('changing an argument breaks verification', () => {
  assert.equal(new ReceiptKey(KEY).verify(signed(), { ...INPUT, arguments: { path: 'notes.txt', limit: 11 } }), false)
  assert.equal(new ReceiptKey(KEY).verify(signed(), { ...INPUT, arguments: { path: 'notes.txt' } }), false)
})

test('changing the output breaks verification, even by one trailing character', () => {
  assert.equal(new ReceiptKey(KEY).verify(signed(), { ...INPUT, output: 'hello ' }), false)
})

test('a receipt of another call or another turn does not verify', () => {
  assert.equal(new ReceiptKey(KEY).verify(signed(), { ...INPUT, callId: 'call_2' }), false)
  assert.equal(new ReceiptKey(KEY).verify(signed(), { ...INPUT, turnId: 'turn_2' }), false)
})

test('a receipt does not verify under another key', () => {
  assert.deepEqual(new ReceiptKey(Buffer.alloc(32, 8)).check(signed(), INPUT), { valid: false, reason: 'mismatch' })
  assert.equal(new ReceiptKey().verify(signed(), INPUT), false)
})

test('a changed timestamp breaks verification', () => {
  const [, mac] = /^tg-receipt-\d+-(.+)$/.exec(signed()) ?? []
  assert.equal(new ReceiptKey(KEY).verify(`tg-receipt-1700000124-${mac ?? ''}`, INPUT), false)
})

test('malformed receipts are reported as malformed, never as a mismatch or a crash', () => {
  const key = new ReceiptKey(KEY)
  const mac = signed().slice(-43)
  for (const bad of [
    '', 'not-a-receipt', 'tg-receipt-', 'tg-receipt-abc-x', 'tg-receipt-123-', 'tg-receipt--' + mac,
    'zc-receipt-1700000123-' + mac, 'tg-receipt-1700000123-' + mac.slice(1), 'tg-receipt-1700000123-' + mac + 'A',
    'tg-receipt-1700000123-' + mac.slice(0, 42) + '!', ' tg-receipt-1700000123-' + mac, 'tg-receipt-1234567890123-' + mac
  ]) {
    assert.deepEqual(key.check(bad, INPUT), { valid: false, reason: 'malformed' }, JSON.stringify(bad))
    assert.equal(parseReceipt(bad), null, JSON.stringify(bad))
  }
})

test('a receipt spelled with a leading zero or non-zero padding bits is not accepted', () => {
  const receipt = signed()
  const mac = receipt.slice(-43)
  assert.equal(new ReceiptKey(KEY).verify(`tg-receipt-01700000123-${mac}`, INPUT), false)
  // The last base64url character holds 4 MAC bits and 2 unused bits: flip only the unused ones.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const last = alphabet.indexOf(mac.slice(-1))
  const variant = `${receipt.slice(0, -1)}${alphabet[last ^ 1] ?? ''}`
  assert.deepEqual(Buffer.from(variant.slice(-43), 'base64url'), Buffer.from(mac, 'base64url'), 'same bytes, other spelling')
  assert.deepEqual(new ReceiptKey(KEY).check(variant, INPUT), { valid: false, reason: 'malformed' })
})
