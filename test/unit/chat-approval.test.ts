import { test } from 'node:test'
import assert from 'node:assert/strict'
import { exactArgumentLines } from '../../client/chat.js'

test('each argument is shown whole under its name, one terminal line per line of the value', () => {
  assert.deepEqual(exactArgumentLines([{ name: 'path', value: 'a.txt' }, { name: 'content', value: 'one⏎\ntwo' }], undefined), [
    '  path:', '    │ a.txt', '  content:', '    │ one⏎', '    │ two'
  ])
})

test('with a terminal width long lines wrap with a distinct continuation mark and nothing is cut', () => {
  const value = `ls${' '.repeat(30)}; touch PWN_TAIL`
  const lines = exactArgumentLines([{ name: 'command', value }], 26)
  assert.deepEqual(lines, ['  command:', `    │ ls${' '.repeat(18)}`, `    ┆ ${' '.repeat(12)}; touch `, '    ┆ PWN_TAIL'])
  assert.equal(lines.slice(1).map((l) => l.slice(6)).join(''), value)
})

test('a call without arguments says so', () => {
  assert.deepEqual(exactArgumentLines([], 80), ['  (no arguments)'])
})
