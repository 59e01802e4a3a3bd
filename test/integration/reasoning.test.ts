/**
 * The model's reasoning as `reasoning.delta` events: chat-completions `reasoning_content` /
 * `reasoning` fields and `<think>` blocks, never in `text.delta` or `final_text`, scrubbed, hidden
 * by `show_reasoning = false`, and carried by the AG-UI and AI SDK endpoints in their own parts.
 */
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { HttpAgent } from '@ag-ui/client'
import type { BaseEvent } from '@ag-ui/core'
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai'
import type { EventEnvelope } from '../../schemas/events.js'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { runTurn } from '../helpers/turns.js'

async function gateway (t: TestContext, overrides: Record<string, unknown> = {}): Promise<TestGateway> {
  const g = await startGateway({ overrides })
  t.after(async () => { await g.close() })
  return g
}

function joined (events: readonly EventEnvelope[], kind: 'text.delta' | 'reasoning.delta'): string {
  return events.map((e) => e.event.kind === kind ? e.event.text : '').join('')
}

function kinds (events: readonly EventEnvelope[]): string[] {
  return events.map((e) => e.event.kind).filter((k, i, all) => k !== all[i - 1])
}

test('streamed reasoning_content deltas become reasoning.delta events, before the text and never part of it', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ reasoning: 'The user greets me; I should greet back.', text: 'Hello there, friend.' })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.equal(turn.status, 'completed')
  assert.equal(joined(events, 'reasoning.delta'), 'The user greets me; I should greet back.')
  assert.ok(events.filter((e) => e.event.kind === 'reasoning.delta').length >= 2, 'reasoning streams in pieces')
  assert.equal(joined(events, 'text.delta'), 'Hello there, friend.')
  assert.deepEqual(kinds(events), ['turn.started', 'iteration', 'reasoning.delta', 'text.delta', 'turn.completed'])
  const last = events.at(-1)?.event
  assert.equal(last?.kind === 'turn.completed' ? last.final_text : null, 'Hello there, friend.')
})

test('reasoning and cached tokens a chat-completions server reports are counted in the turn\'s usage', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({
    reasoning: 'Counting.',
    text: 'Counted.',
    usage: {
      prompt_tokens: 50,
      completion_tokens: 20,
      prompt_tokens_details: { cached_tokens: 32 },
      completion_tokens_details: { reasoning_tokens: 12 }
    }
  })
  const { turn } = await runTurn(g, { message: 'q' })
  assert.deepEqual(turn.usage, {
    prompt_tokens: 50, completion_tokens: 20, total_tokens: 70, reported_calls: 1, unreported_calls: 0, cost_usd: null,
    cache_read_tokens: 32, reasoning_tokens: 12
  })
})

test('a JSON answer\'s `reasoning` field (OpenRouter) becomes one reasoning.delta', async (t) => {
  const g = await gateway(t, { providers: { fake: { stream: false } } })
  g.provider.enqueue({ reasoning: 'Short thought.', reasoningField: 'reasoning', text: 'Answer.' })
  const { events } = await runTurn(g, { message: 'q' })
  assert.deepEqual(kinds(events), ['turn.started', 'iteration', 'reasoning.delta', 'text.delta', 'turn.completed'])
  assert.equal(joined(events, 'reasoning.delta'), 'Short thought.')
  assert.equal(joined(events, 'text.delta'), 'Answer.')
})

test('<think> blocks in streamed text become reasoning.delta and are left out of text.delta and final_text', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ text: '<think>Plan: be brief.</think>Brief answer here.' })
  const { events } = await runTurn(g, { message: 'q' })
  assert.equal(joined(events, 'reasoning.delta'), 'Plan: be brief.')
  assert.equal(joined(events, 'text.delta'), 'Brief answer here.')
  const last = events.at(-1)?.event
  assert.equal(last?.kind === 'turn.completed' ? last.final_text : null, 'Brief answer here.')
})

test('<think> blocks of an answer that did not stream (stream = false) become one reasoning.delta', async (t) => {
  const g = await gateway(t, { providers: { fake: { stream: false } } })
  g.provider.enqueue({ text: '<think>Whole thought.</think>Whole answer.' })
  const { events } = await runTurn(g, { message: 'q' })
  assert.deepEqual(kinds(events), ['turn.started', 'iteration', 'reasoning.delta', 'text.delta', 'turn.completed'])
  assert.equal(joined(events, 'reasoning.delta'), 'Whole thought.')
  assert.equal(joined(events, 'text.delta'), 'Whole answer.')
})

test('<think> blocks of a text-protocol agent become reasoning.delta too', async (t) => {
  const g = await gateway(t, { providers: { fake: { native_tools: false } } })
  g.provider.enqueue({ text: '<think>No tool needed.</think>Plain answer.' })
  const { events } = await runTurn(g, { message: 'q' })
  assert.equal(joined(events, 'reasoning.delta'), 'No tool needed.')
  assert.equal(joined(events, 'text.delta'), 'Plain answer.')
})

test('reasoning is scrubbed like text: a key the model thinks about is redacted', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ reasoning: 'I will use ghp_0123456789abcdefghijABCDEFGHIJ for the push.', text: 'Pushed.' })
  const { events } = await runTurn(g, { message: 'push' })
  assert.equal(joined(events, 'reasoning.delta'), 'I will use ghp_*[REDACTED] for the push.')
})

test('show_reasoning = false keeps reasoning out of the event log; the answer is unchanged', async (t) => {
  const g = await gateway(t, { agents: { default: { show_reasoning: false } } })
  g.provider.enqueue({ reasoning: 'Hidden thought.', text: '<think>also hidden</think>Visible answer.' })
  const { turn, events } = await runTurn(g, { message: 'q' })
  assert.equal(turn.status, 'completed')
  assert.deepEqual(kinds(events), ['turn.started', 'iteration', 'text.delta', 'turn.completed'])
  assert.equal(joined(events, 'text.delta'), 'Visible answer.')
})

test('the AG-UI endpoint carries reasoning as REASONING_* events of its own message, read by @ag-ui/client', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ reasoning: 'Thinking it over.', text: 'Done thinking.' })
  const agent = new HttpAgent({ url: `${g.url}/v1/ag-ui`, threadId: 'thread-r', initialMessages: [{ id: 'u1', role: 'user', content: 'q' }] })
  const events: BaseEvent[] = []
  await agent.runAgent({ runId: 'run-r' }, { onEvent: ({ event }) => { events.push(event) } })
  const types = events.map((e) => e.type).filter((k, i, all) => k !== all[i - 1])
  assert.deepEqual(types, [
    'RUN_STARTED', 'REASONING_START', 'REASONING_MESSAGE_START', 'REASONING_MESSAGE_CONTENT', 'REASONING_MESSAGE_END', 'REASONING_END',
    'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED'
  ])
  const reasoning = events.filter((e) => e.type === 'REASONING_MESSAGE_CONTENT').map((e) => (e as unknown as { delta: string }).delta).join('')
  assert.equal(reasoning, 'Thinking it over.')
  const message = agent.messages.find((m) => m.role === 'reasoning')
  assert.equal(message?.content, 'Thinking it over.')
  assert.equal(agent.messages.find((m) => m.role === 'assistant')?.content, 'Done thinking.')
})

test('the AI SDK endpoint carries reasoning as reasoning-start/delta/end, a reasoning part for readUIMessageStream', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ reasoning: 'Weighing options.', text: 'Option B.' })
  const transport = new DefaultChatTransport<UIMessage>({ api: `${g.url}/v1/ai-sdk/chat` })
  const stream = await transport.sendMessages({
    chatId: 'chat-r', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'pick' }] }],
    trigger: 'submit-message', messageId: undefined, abortSignal: undefined
  })
  const [a, b] = stream.tee()
  const types: string[] = []
  const recording = (async () => { for await (const c of b) types.push(c.type) })()
  let last: UIMessage | undefined
  for await (const m of readUIMessageStream({ stream: a })) last = m
  await recording
  assert.deepEqual(types.filter((k, i, all) => k !== all[i - 1]), [
    'start', 'start-step', 'reasoning-start', 'reasoning-delta', 'reasoning-end', 'text-start', 'text-delta', 'text-end', 'finish-step', 'finish'
  ])
  const parts = last?.parts.filter((p) => p.type === 'reasoning' || p.type === 'text').map((p) => [p.type, 'text' in p ? p.text : ''])
  assert.deepEqual(parts, [['reasoning', 'Weighing options.'], ['text', 'Option B.']])
})
