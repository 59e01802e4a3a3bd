import { test } from 'node:test'
import assert from 'node:assert/strict'
import { modelArguments } from '@tollgate/client'

test('the runtime\'s approved marker on a shell call is never shown; other tools keep an argument of that name', () => {
  assert.deepEqual(modelArguments('shell', { command: 'ls', approved: true }), { command: 'ls' })
  assert.deepEqual(modelArguments('shell', { command: 'ls', approved: false }), { command: 'ls' })
  assert.deepEqual(modelArguments('shell', { command: 'ls' }), { command: 'ls' })
  assert.deepEqual(modelArguments('review', { approved: true }), { approved: true })
})
