import { test } from 'node:test'
import assert from 'node:assert/strict'
import { truncateToolResult } from '../../src/turn/truncate.js'

const MARKER = /\n\n\[\.\.\. (\d+) characters truncated \.\.\.\]\n\n/

function parts (text: string): { head: string, removed: number, tail: string } {
  const match = MARKER.exec(text)
  assert.ok(match, `no truncation marker in ${JSON.stringify(text)}`)
  return { head: text.slice(0, match.index), removed: Number(match[1]), tail: text.slice(match.index + match[0].length) }
}

test('a result shorter than the limit passes through unchanged', () => {
  assert.deepEqual(truncateToolResult('short output', 100), { text: 'short output', truncated: false })
})

test('a result exactly at the limit passes through unchanged', () => {
  const text = 'x'.repeat(100)
  assert.deepEqual(truncateToolResult(text, 100), { text, truncated: false })
})

test('a limit of zero disables truncation', () => {
  const text = 'y'.repeat(10000)
  assert.deepEqual(truncateToolResult(text, 0), { text, truncated: false })
})

test('a long result is cut with the truncation marker between head and tail', () => {
  const result = truncateToolResult('a'.repeat(200) + 'b'.repeat(200), 100)
  assert.equal(result.truncated, true)
  assert.ok(result.text.includes('[... '))
  assert.ok(result.text.includes('characters truncated ...]\n\n'))
})

test('the head keeps two thirds of the limit and the tail the rest', () => {
  const text = Array.from({ length: 1000 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('')
  const { head, removed, tail } = parts(truncateToolResult(text, 300).text)
  assert.equal(head, text.slice(0, 200))
  assert.equal(tail, text.slice(900))
  assert.equal(removed, 700)
})

test('the removed count is in bytes and boundaries never split a multi-byte character', () => {
  const text = '🦀'.repeat(50) + '中文'.repeat(50) + 'é'.repeat(50)
  const result = truncateToolResult(text, 101)
  const { head, removed, tail } = parts(result.text)
  assert.equal(result.text.includes('\ufffd'), false)
  assert.ok(text.startsWith(head))
  assert.ok(text.endsWith(tail))
  assert.equal(head, '🦀'.repeat(16))
  assert.equal(tail, 'é'.repeat(17))
  assert.equal(removed, Buffer.byteLength(text) - Buffer.byteLength(head) - Buffer.byteLength(tail))
})

test('a very small limit still keeps the start and the end', () => {
  const result = truncateToolResult('abcdefghijklmnopqrstuvwxyz', 5)
  assert.ok(result.text.startsWith('abc'))
  assert.ok(result.text.endsWith('yz'))
  assert.equal(parts(result.text).removed, 21)
})

test('a tail that cannot fit a whole character is left empty rather than split', () => {
  const { head, removed, tail } = parts(truncateToolResult('🦀🦀', 7).text)
  assert.deepEqual({ head, removed, tail }, { head: '🦀', removed: 4, tail: '' })
})

test('a fractional limit is rounded down to whole bytes', () => {
  assert.deepEqual(truncateToolResult('abcdefghij', 9.9), truncateToolResult('abcdefghij', 9))
})

test('an image marker across the head boundary is dropped from the head whole', () => {
  const text = 'a'.repeat(60) + '[IMAGE:/tmp/screenshot.png]' + 'b'.repeat(200)
  const { head, tail } = parts(truncateToolResult(text, 100).text)
  assert.equal(head, 'a'.repeat(60))
  assert.equal(tail, 'b'.repeat(34))
})

test('an image marker across the tail boundary is skipped by the tail whole', () => {
  const text = 'a'.repeat(200) + '[IMAGE:/tmp/screenshot.png]' + 'b'.repeat(20)
  const { head, tail } = parts(truncateToolResult(text, 100).text)
  assert.equal(head, 'a'.repeat(66))
  assert.equal(tail, 'b'.repeat(20))
})

test('a complete image marker inside the head is kept', () => {
  const text = 'a'.repeat(10) + '[IMAGE:/tmp/x.png]' + 'c'.repeat(300)
  const { head } = parts(truncateToolResult(text, 120).text)
  assert.equal(head, 'a'.repeat(10) + '[IMAGE:/tmp/x.png]' + 'c'.repeat(52))
})
