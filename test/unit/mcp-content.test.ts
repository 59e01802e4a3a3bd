import { test } from 'node:test'
import assert from 'node:assert/strict'
import { boundText, convertCallResult, MCP_ERROR_FALLBACK } from '../../src/mcp/content.js'

test('text blocks of an MCP result are joined line by line', () => {
  const result = convertCallResult({ content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] }, 1000)
  assert.deepEqual(result, { success: true, output: 'one\ntwo', error: null })
})

test('binary content is described, never inlined', () => {
  const result = convertCallResult({
    content: [
      { type: 'image', mimeType: 'image/png', data: 'aGVsbG8=' },
      { type: 'resource_link', uri: 'file:///a.txt', name: 'a.txt' },
      { type: 'resource', resource: { uri: 'mem://x', text: 'inline text' } },
      { type: 'resource', resource: { uri: 'mem://y', mimeType: 'application/pdf', blob: 'AAAA' } }
    ]
  }, 1000)
  assert.equal(result.output, '[image: image/png, 5 bytes]\n[resource link: a.txt <file:///a.txt>]\n[resource <mem://x>]\ninline text\n[resource <mem://y>: application/pdf, 3 bytes]')
})

test('an isError result is a failure whose reason is the server\'s text', () => {
  assert.deepEqual(convertCallResult({ content: [{ type: 'text', text: 'boom' }], isError: true }, 1000), { success: false, output: '', error: 'boom' })
  assert.deepEqual(convertCallResult({ content: [], isError: true }, 1000), { success: false, output: '', error: MCP_ERROR_FALLBACK })
})

test('structured content travels as data, and becomes pretty JSON text when there is no text block', () => {
  assert.deepEqual(convertCallResult({ content: [{ type: 'text', text: 'sum is 3' }], structuredContent: { sum: 3 } }, 1000), { success: true, output: 'sum is 3', error: null, data: { sum: 3 } })
  assert.deepEqual(convertCallResult({ content: [], structuredContent: { sum: 3 } }, 1000), { success: true, output: '{\n  "sum": 3\n}', error: null, data: { sum: 3 } })
})

test('a legacy toolResult answer is carried as structured data', () => {
  assert.deepEqual(convertCallResult({ toolResult: { ok: true } }, 1000), { success: true, output: '{\n  "ok": true\n}', error: null, data: { ok: true } })
})

test('converted text is bounded without splitting a surrogate pair', () => {
  assert.equal(boundText('abcdef', 10), 'abcdef')
  assert.equal(boundText('abcdef', 3), 'abc\n[... MCP output truncated at 3 characters]')
  assert.equal(boundText('a😀b', 2), 'a\n[... MCP output truncated at 2 characters]')
})
