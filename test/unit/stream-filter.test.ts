import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createThinkFilter } from '../../src/turn/stream-filter.js'

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
