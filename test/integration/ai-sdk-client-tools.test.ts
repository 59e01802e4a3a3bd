/**
 * The AI SDK's client-side tools on POST /v1/ai-sdk/chat, with `ai`'s own DefaultChatTransport and
 * readUIMessageStream: the call's input ends the stream while the turn waits, and the follow-up
 * request carrying the output `addToolOutput` put in the message completes the turn with it.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai'
import { startGateway } from '../helpers/gateway.js'
import { finishedTurn } from '../helpers/turns.js'

const CLIENT_TOOLS = [{
  name: 'get_location', description: 'The user\'s location, from the browser', parameters: { type: 'object', properties: {} }
}]

async function lastMessage (stream: ReadableStream<any>, message?: UIMessage): Promise<UIMessage> {
  let last: UIMessage | undefined
  for await (const m of readUIMessageStream({ stream, ...(message === undefined ? {} : { message }) })) last = m as UIMessage
  assert.ok(last !== undefined)
  return last
}

test('an AI SDK client-side tool: the stream ends at the call, the addToolOutput follow-up completes the turn with the output', async (t) => {
  const g = await startGateway({ overrides: { agents: { default: { tools: ['file_read'] } } } })
  t.after(() => g.close())
  g.provider.enqueue({ toolCalls: [{ id: 'l1', name: 'get_location', arguments: {} }] }, { text: 'You are in Berlin.' })
  const chat = new DefaultChatTransport<UIMessage>({ api: `${g.url}/v1/ai-sdk/chat`, body: { client_tools: CLIENT_TOOLS } })
  const user: UIMessage = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'where am I?' }] }
  const first = await chat.sendMessages({ chatId: 'chat-ct', messages: [user], trigger: 'submit-message', messageId: undefined, abortSignal: undefined })
  const assistant = await lastMessage(first)
  const part = assistant.parts.find((p) => p.type === 'dynamic-tool')
  assert.ok(part !== undefined && part.type === 'dynamic-tool')
  assert.deepEqual([part.toolName, part.state], ['get_location', 'input-available'])
  const turnId = assistant.id
  assert.equal((await g.http('GET', `/v1/turns/${turnId}`)).body.pending_approvals[0]?.client_tool, true)

  // What addToolOutput does to the message before the automatic follow-up request.
  const answered = {
    ...assistant,
    parts: assistant.parts.map((p) => p === part ? { ...part, state: 'output-available', output: { city: 'Berlin' } } as unknown as typeof p : p)
  }
  const second = await chat.sendMessages({ chatId: 'chat-ct', messages: [user, answered], trigger: 'submit-message', messageId: undefined, abortSignal: undefined })
  const final = await lastMessage(second, answered)
  const texts = final.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)
  assert.deepEqual(texts, ['You are in Berlin.'])
  const turn = await finishedTurn(g, turnId)
  assert.equal(turn.status, 'completed')
  assert.deepEqual(turn.tool_calls.map((c: any) => [c.name, c.status, c.output]), [['get_location', 'replaced', '{"city":"Berlin"}']])
  assert.deepEqual(turn.approvals.map((a: any) => [a.decision, a.channel]), [['edit', 'ai-sdk']])
})
