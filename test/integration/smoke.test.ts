import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startGateway, shape, assertSeqContiguous } from '../helpers/gateway.js'

test('a turn started over WebSocket streams a tool call, its result and the final answer', async (t) => {
  const g = await startGateway()
  t.after(() => g.close())
  await writeFile(join(g.workspace, 'hello.txt'), 'hi there')
  g.provider.enqueue(
    { text: 'Let me read it.', toolCalls: [{ id: 'c1', name: 'file_read', arguments: { path: 'hello.txt' } }] },
    { text: 'The file says hi there.' }
  )
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'read hello.txt' })
  assert.equal(accepted.type, 'turn.accepted')
  const events = await ws.waitForTerminal(accepted.turn_id)
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:file_read', 'tool_result:file_read:ok', 'iteration', 'turn.completed'])
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.equal(result?.kind === 'tool_result' && result.output, 'hi there')
  const second = g.provider.requests[1]?.body
  assert.equal(second?.messages.at(-1)?.role, 'tool')
  assert.equal(second?.messages.at(-1)?.content, 'hi there')
})
