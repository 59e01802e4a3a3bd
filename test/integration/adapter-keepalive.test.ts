/**
 * The AG-UI and AI SDK streams go through the one SSE writer: while the turn has nothing to say (a
 * long model call, a slow tool) they carry keep-alive comments, which the official clients skip.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { HttpAgent } from '@ag-ui/client'
import type { BaseEvent } from '@ag-ui/core'
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai'
import { startProbeGateway } from '../helpers/tools.js'
import { gate } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

const KEEPALIVE = ': keep-alive\n\n'
const ANSWER = 'Answer after a long think.'

/** A fetch that hands the response on and keeps a copy of its body as text. */
function recordingFetch (): { fetch: (url: string | URL | Request, init?: RequestInit) => Promise<Response>, text: () => string } {
  let text = ''
  return {
    fetch: async (url, init) => {
      const res = await fetch(url, init)
      if (res.body === null) return res
      const [mine, theirs] = res.body.tee()
      void (async () => {
        const decoder = new TextDecoder()
        for await (const chunk of mine) text += decoder.decode(chunk, { stream: true })
      })()
      return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers })
    },
    text: () => text
  }
}

const keepalives = (text: string): number => text.split(KEEPALIVE).length - 1

test('the AI SDK stream carries keep-alive comments while the model is silent, and readUIMessageStream still reads the answer', async (t) => {
  const { g } = await startProbeGateway(t, { server: { sse_keepalive_ms: 50 } })
  const held = gate()
  g.provider.enqueue({ text: ANSWER, gate: held.promise })
  const recorder = recordingFetch()
  const chat = new DefaultChatTransport<UIMessage>({ api: `${g.url}/v1/ai-sdk/chat`, fetch: recorder.fetch })
  const stream = await chat.sendMessages({
    chatId: 'chat-keepalive',
    messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'think long' }] }],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined
  })
  const reading = (async () => {
    let last: UIMessage | undefined
    for await (const message of readUIMessageStream({ stream })) last = message
    return last
  })()
  await eventually(() => keepalives(recorder.text()) >= 3, { what: 'keep-alive comments while the model is silent' })
  assert.ok(!recorder.text().includes('text-delta'), 'no text before the model answered')
  held.open()
  const message = await reading
  assert.equal(message?.parts.flatMap((p) => p.type === 'text' ? [p.text] : []).join(''), ANSWER)
})

test('the AG-UI stream carries keep-alive comments while the model is silent, and HttpAgent still reads the run', async (t) => {
  const { g } = await startProbeGateway(t, { server: { sse_keepalive_ms: 50 } })
  const held = gate()
  g.provider.enqueue({ text: ANSWER, gate: held.promise })
  const recorder = recordingFetch()
  const agent = new HttpAgent({
    url: `${g.url}/v1/ag-ui`,
    threadId: 'thread-keepalive',
    fetch: recorder.fetch,
    initialMessages: [{ id: 'u1', role: 'user', content: 'think long' }]
  })
  const events: BaseEvent[] = []
  const run = agent.runAgent({ runId: 'run-1' }, { onEvent: ({ event }) => { events.push(event) } })
  await eventually(() => keepalives(recorder.text()) >= 3, { what: 'keep-alive comments while the model is silent' })
  assert.ok(!events.some((e) => e.type === 'TEXT_MESSAGE_CONTENT'), 'no text before the model answered')
  held.open()
  await run
  const text = events.flatMap((e) => e.type === 'TEXT_MESSAGE_CONTENT' ? [(e as unknown as { delta: string }).delta] : []).join('')
  assert.equal(text, ANSWER)
  assert.equal(events.at(-1)?.type, 'RUN_FINISHED')
})
