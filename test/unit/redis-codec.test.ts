import { test } from 'node:test'
import assert from 'node:assert/strict'
import { envelopesOf, parseControl, parseEnvelope } from '../../src/bus/redis-codec.js'
import { seqOfEntryId } from '../../src/bus/redis-writer.js'
import { LEGACY_TENANT } from '../../src/core/envelope.js'

const approval = { type: 'approval', request_id: 'apr_1', principal: 't/s', decision: 'yes', decided_by: 'ws:c1', channel: 'websocket', rpc: { id: 'r1', from: 'inst-b' } }

test('well-formed control requests and replies parse as sent', () => {
  assert.deepEqual(parseControl(JSON.stringify(approval)), approval)
  const reply = { type: 'reply', id: 'r1', to: 'inst-b', from: 'inst-a', handled: true, turn_id: 'turn_1' }
  assert.deepEqual(parseControl(JSON.stringify(reply)), reply)
  const cancel = { type: 'cancel', turn_id: 'turn_1', principal: 't/s', reason: 'cancelled by client' }
  assert.deepEqual(parseControl(JSON.stringify(cancel)), cancel)
})

test('control messages with a missing, mistyped or oversized field are dropped', () => {
  assert.equal(parseControl('not json'), null)
  assert.equal(parseControl('null'), null)
  assert.equal(parseControl(JSON.stringify({ type: 'shutdown' })), null)
  assert.equal(parseControl(JSON.stringify({ ...approval, decision: 'maybe' })), null)
  assert.equal(parseControl(JSON.stringify({ ...approval, principal: 42 })), null)
  assert.equal(parseControl(JSON.stringify({ ...approval, replacement: 'x'.repeat(70_000) })), null)
  assert.equal(parseControl(JSON.stringify({ ...approval, rpc: { id: 'r1' } })), null)
  assert.equal(parseControl(JSON.stringify({ type: 'reply', id: 'r1', to: 'b', from: 'a', handled: 'yes' })), null)
  assert.equal(parseControl(JSON.stringify({ type: 'watching', turn_id: 'turn_1', principal: 't/s' })), null)
})

test('a steer request and its reply pass with their fields; an oversized message or a mistyped steered answer is dropped', () => {
  const steer = { type: 'steer', turn_id: 'turn_1', principal: 't/s', message: 'shorter', rpc: { id: 'r1', from: 'a' } }
  assert.deepEqual(parseControl(JSON.stringify(steer)), steer)
  assert.equal(parseControl(JSON.stringify({ ...steer, message: 'x'.repeat(100_001) })), null)
  assert.equal(parseControl(JSON.stringify({ ...steer, message: 7 })), null)
  // `steerer`: the asking instance checked the sender's turns:steer; only `true` is a value.
  assert.deepEqual(parseControl(JSON.stringify({ ...steer, steerer: true })), { ...steer, steerer: true })
  assert.equal(parseControl(JSON.stringify({ ...steer, steerer: 'yes' })), null)
  const reply = { type: 'reply', id: 'r1', to: 'a', from: 'b', handled: true, turn_id: 'turn_1', steered: { seq: 4, n: 1, queued: 1 } }
  assert.deepEqual(parseControl(JSON.stringify(reply)), reply)
  assert.equal(parseControl(JSON.stringify({ ...reply, steered: { seq: '4', n: 1, queued: 1 } })), null)
})

test('an envelope needs a turn, a session, a positive integer seq and an event kind', () => {
  const good = { turn_id: 'turn_1', session_id: 'ses_1', tenant: 'acme', seq: 3, ts: '2026-01-01T00:00:00.000Z', event: { kind: 'iteration', n: 1 } }
  assert.deepEqual(parseEnvelope(JSON.stringify(good)), good)
  assert.equal(parseEnvelope(JSON.stringify({ ...good, seq: 0 })), null)
  assert.equal(parseEnvelope(JSON.stringify({ ...good, seq: 1.5 })), null)
  assert.equal(parseEnvelope(JSON.stringify({ ...good, event: {} })), null)
  assert.equal(parseEnvelope(JSON.stringify({ ...good, session_id: undefined })), null)
  assert.equal(parseEnvelope(JSON.stringify({ ...good, tenant: 7 })), null)
  assert.equal(parseEnvelope('{'), null)
})

test('an envelope sent before sessions were qualified by their tenant is read with the legacy tenant', () => {
  const old = { turn_id: 'turn_1', session_id: 'ses_1', seq: 3, ts: '2026-01-01T00:00:00.000Z', event: { kind: 'iteration', n: 1 } }
  assert.deepEqual(parseEnvelope(JSON.stringify(old)), { ...old, tenant: LEGACY_TENANT })
})

test('stream entries yield their envelopes and skip malformed ones; entry ids give the seq', () => {
  const e = { turn_id: 'turn_1', session_id: 'ses_1', tenant: 'acme', seq: 1, ts: '2026-01-01T00:00:00.000Z', event: { kind: 'iteration', n: 1 } }
  assert.deepEqual(envelopesOf([['0-1', ['e', JSON.stringify(e)]], ['0-2', ['e', 'garbage']], ['0-3', ['x', 'y']]]), [e])
  assert.equal(seqOfEntryId('0-42'), 42)
  assert.equal(seqOfEntryId('garbage'), 0)
})
