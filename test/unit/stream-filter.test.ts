import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createFrameHoldBack, createThinkFilter, unsentRemainder } from '../../src/turn/stream-filter.js'

function run (chunks: string[]): string {
  const filter = createThinkFilter()
  return chunks.map((c) => filter.push(c).visible).join('')
}

function reasoningOf (chunks: string[]): string {
  const filter = createThinkFilter()
  return chunks.map((c) => filter.push(c).reasoning).join('')
}

test('text without reasoning tags passes through unchanged', () => {
  assert.equal(run(['Hello ', 'world']), 'Hello world')
})

test('a think block inside one chunk is dropped', () => {
  assert.equal(run(['a<think>secret plan</think>b']), 'ab')
})

test('tags split across chunks are still recognised', () => {
  assert.equal(run(['Hi <th', 'ink>hidden', ' stuff</thi', 'nk> there']), 'Hi  there')
})

test('a thinking block and upper-case tags are dropped too', () => {
  assert.equal(run(['x<THINKING>', 'no', '</Thinking>y']), 'xy')
})

test('a lone < that does not start a tag is released with the next chunk', () => {
  assert.equal(run(['1 <', ' 2']), '1 < 2')
})

test('an unclosed think block hides the rest of the stream', () => {
  assert.equal(run(['shown<think>never', ' shown']), 'shown')
})

test('the inside of think blocks comes back as reasoning, tags split across chunks included', () => {
  assert.equal(reasoningOf(['Hi <th', 'ink>hidden', ' stuff</thi', 'nk> there<thinking>more</thinking>']), 'hidden stuffmore')
})

function held (chunks: string[]): string[] {
  const filter = createFrameHoldBack()
  return chunks.map((c) => filter.push(c))
}

test('prose passes the frame hold-back as it arrives; whitespace waits for what follows it', () => {
  assert.deepEqual(held(['Hello ', 'wor', 'ld, a < b', ' and `code`', ' done']), ['Hello', ' wor', 'ld, a < b', ' and `code', '` done'])
})

test('a call frame split across chunks never goes out, nor does anything after it', () => {
  const pieces = ['Checking.\n<to', 'ol_ca', 'll>{"name":"file_read","arguments":{}}</tool_call>', ' then more']
  assert.deepEqual(held(pieces), ['Checking.', '', '', ''])
})

test('every frame spelling and an echoed tool result latch the hold-back', () => {
  for (const marker of ['<tool_calls>', '<TOOL_CALL ', '<toolcall>', '<tool-call>', '<invoke name="x">', '<tool_result>', '<|eom|>', '```tool_call\n', '``` tool shell\n', '```invoke\n']) {
    const out = held(['ok ', marker, '{"name":"shell"}', ' tail']).join('')
    assert.equal(out, 'ok', marker)
  }
})

test('ordinary fences and tags are released once they cannot open a frame', () => {
  assert.equal(held(['see ```', 'ts\nconst a = 1\n```', ' and <b>bold</b>']).join(''), 'see ```ts\nconst a = 1\n``` and <b>bold</b>')
})

test('a reply that opens with JSON or a fence is held whole: it may be a call envelope', () => {
  assert.equal(held(['  ', '{"name":"shell","arguments":{}}']).join(''), '')
  assert.equal(held(['[{"name":"x"}]']).join(''), '')
  assert.equal(held(['```json\n{}\n```']).join(''), '')
})

test('the unsent remainder is what the parsed text adds to what streamed, whitespace runs folded', () => {
  assert.equal(unsentRemainder('Checking.', 'Checking.\nafter the frame'), '\nafter the frame')
  assert.equal(unsentRemainder('\n a\n\n\nb', 'a\n\nb and more'), ' and more')
  assert.equal(unsentRemainder('all of it', 'all of it'), '')
  assert.equal(unsentRemainder('something else', 'a different text'), null)
})
