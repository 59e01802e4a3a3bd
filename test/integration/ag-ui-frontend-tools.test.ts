/**
 * AG-UI frontend tools with the real `HttpAgent`: the run ends when the model calls one (the
 * Tollgate turn waits), the client runs it and starts the next run with a tool message, and the
 * turn completes with that result.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { HttpAgent } from '@ag-ui/client'
import type { BaseEvent } from '@ag-ui/core'
import { startGateway } from '../helpers/gateway.js'
import { finishedTurn } from '../helpers/turns.js'

const CONFIRM = {
  name: 'confirm',
  description: 'Ask the user to confirm in the page',
  parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] }
}

test('an HttpAgent frontend tool pauses the turn; the tool message of the next run completes it with the result', async (t) => {
  const g = await startGateway({ overrides: { agents: { default: { tools: ['file_read'] } } } })
  t.after(() => g.close())
  g.provider.enqueue({ toolCalls: [{ id: 'f1', name: 'confirm', arguments: { question: 'Ship it?' } }] }, { text: 'Shipping, as confirmed.' })
  const agent = new HttpAgent({ url: `${g.url}/v1/ag-ui`, threadId: 'thread-ft', initialMessages: [{ id: 'u1', role: 'user', content: 'ship it' }] })
  const first: BaseEvent[] = []
  await agent.runAgent({ runId: 'run-1', tools: [CONFIRM] }, { onEvent: ({ event }) => { first.push(event) } })
  assert.deepEqual(first.map((e) => e.type), ['RUN_STARTED', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'RUN_FINISHED'])
  const start = first[1] as unknown as { toolCallId: string, toolCallName: string }
  assert.equal(start.toolCallName, 'confirm')
  assert.deepEqual(JSON.parse((first[2] as unknown as { delta: string }).delta), { question: 'Ship it?' })
  const turnId = (first[0] as unknown as { metadata: { tollgate: { turn_id: string } } }).metadata.tollgate.turn_id
  const waiting = (await g.http('GET', `/v1/turns/${turnId}`)).body
  assert.equal(waiting.status, 'running')
  assert.deepEqual(waiting.pending_approvals.map((p: any) => [p.call_id, p.client_tool]), [[start.toolCallId, true]])
  assert.deepEqual(g.provider.requests[0]?.body.tools?.map((s) => s.function.name).sort(), ['confirm', 'file_read'])

  agent.addMessage({ id: 'tool-1', role: 'tool', toolCallId: start.toolCallId, content: 'confirmed' })
  const second: BaseEvent[] = []
  await agent.runAgent({ runId: 'run-2', tools: [CONFIRM] }, { onEvent: ({ event }) => { second.push(event) } })
  assert.equal(second.at(-1)?.type, 'RUN_FINISHED')
  const result = second.find((e) => e.type === 'TOOL_CALL_RESULT') as unknown as { toolCallId: string, content: string } | undefined
  assert.deepEqual([result?.toolCallId, result?.content], [start.toolCallId, 'confirmed'])
  const turn = await finishedTurn(g, turnId)
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, 'Shipping, as confirmed.')
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.name, c.status, c.output]), [['confirm', 'replaced', 'confirmed']])
  assert.deepEqual(turn.approvals.map((a: any) => [a.decision, a.channel]), [['edit', 'ag-ui']])
})
