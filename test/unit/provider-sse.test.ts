/**
 * The event-stream parser provider streams are read with: fed the response's bytes in whatever
 * pieces the network gives, it yields the same events as for the whole body at once.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SseParser, type SseMessage } from '../../src/providers/sse.js'

function parse (pieces: ReadonlyArray<Uint8Array | string>): SseMessage[] {
  const parser = new SseParser()
  const out: SseMessage[] = []
  for (const piece of pieces) out.push(...parser.feed(piece))
  out.push(...parser.end())
  return out
}

/** The body cut after every byte. */
function byteByByte (body: Buffer): Uint8Array[] {
  return [...body].map((b) => Uint8Array.of(b))
}

const BODY = 'event: delta\ndata: {"text":"héllo wörld ✓ 🙂"}\n\n: a comment\ndata: line one\ndata: line two\nid: 7\n\n'
const EXPECTED: SseMessage[] = [
  { event: 'delta', data: '{"text":"héllo wörld ✓ 🙂"}' },
  { event: 'message', data: 'line one\nline two', id: '7' }
]

test('a body fed at once or byte by byte (characters split across chunks) gives the same events', () => {
  assert.deepEqual(parse([Buffer.from(BODY)]), EXPECTED)
  assert.deepEqual(parse(byteByByte(Buffer.from(BODY))), EXPECTED)
})

test('CRLF and lone CR line ends, split between chunks, read as LF does', () => {
  const crlf = Buffer.from(BODY.replaceAll('\n', '\r\n'))
  assert.deepEqual(parse([crlf]), EXPECTED)
  assert.deepEqual(parse(byteByByte(crlf)), EXPECTED)
  assert.deepEqual(parse(byteByByte(Buffer.from(BODY.replaceAll('\n', '\r')))), EXPECTED)
})

test('a leading byte-order mark is dropped, split or whole; one later in the stream is data', () => {
  const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('data: a\n\ndata: \ufeffb\n\n')])
  const expected = [{ event: 'message', data: 'a' }, { event: 'message', data: '\ufeffb' }]
  assert.deepEqual(parse([bom]), expected)
  assert.deepEqual(parse(byteByByte(bom)), expected)
})

test('a last event with no blank line after it is flushed at the end', () => {
  assert.deepEqual(parse([Buffer.from('data: {"done":true}')]), [{ event: 'message', data: '{"done":true}' }])
})

test('a line past the size bound is refused', () => {
  const parser = new SseParser({ maxLineBytes: 16 })
  assert.throws(() => parser.feed(Buffer.from(`data: ${'x'.repeat(32)}`)), /size limit/)
})
