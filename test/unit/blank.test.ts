/** The blank test the streamed-text paths use agrees with the regex class `\s` on every UTF-16 code unit. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { isBlankAt } from '../../src/core/blank.js'

test('isBlankAt answers as /\\s/ does for every code unit', () => {
  const differ: number[] = []
  for (let code = 0; code <= 0xffff; code++) {
    const c = String.fromCharCode(code)
    if (isBlankAt(`a${c}`, 1) !== /\s/.test(c)) differ.push(code)
  }
  assert.deepEqual(differ, [])
})
