/**
 * The SSE frame encoder the turn routes share: the frame carries seq, kind and the envelope
 * without its routing fields, and an envelope that reaches many streams is encoded once.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { BusEnvelope } from '../../src/core/envelope.js'
import { createSseFrames } from '../../src/transport/sse.js'

function envelope (seq: number): BusEnvelope {
  return { turn_id: 'turn_1', session_id: 'ses_1', tenant: 'acme', seq, ts: '2026-12-06T10:00:00.000Z', event: { kind: 'text.delta', text: 'Hi' } }
}

test('an event\'s SSE frame: id is its seq, event its kind, data the envelope without session id and tenant', () => {
  const frames = createSseFrames()
  assert.equal(frames(envelope(7)),
    'id: 7\nevent: text.delta\ndata: {"turn_id":"turn_1","seq":7,"ts":"2026-12-06T10:00:00.000Z","event":{"kind":"text.delta","text":"Hi"}}\n\n')
})

test('one envelope object is encoded once for every stream it reaches; another object is encoded anew', () => {
  const frames = createSseFrames()
  const e = envelope(1)
  const first = frames(e)
  // Published envelopes never change; changing one here shows the second stream got the first encoding.
  ;(e.event as { text: string }).text = 'changed'
  assert.equal(frames(e), first)
  assert.match(frames(envelope(1)), /"text":"Hi"/)
  assert.match(createSseFrames()(e), /"text":"changed"/, 'each set of routes has its own encoder')
})
