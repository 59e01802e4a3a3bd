import { test } from 'node:test'
import assert from 'node:assert/strict'
import { access, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startGateway, shape, assertSeqContiguous, type TestGateway } from '../helpers/gateway.js'
import type { EventEnvelope } from '../../schemas/events.js'
import { MALFORMED_FALLBACK_TEXT, PARSE_ERROR_FEEDBACK } from '../../src/turn/loop.js'
import { runTurn } from '../helpers/turns.js'

const TEXT_PROVIDER = { providers: { fake: { native_tools: false } } }

async function gateway (t: { after: (fn: () => Promise<void>) => void }, overrides?: unknown): Promise<TestGateway> {
  const g = await startGateway(overrides === undefined ? {} : { overrides })
  t.after(() => g.close())
  await writeFile(join(g.workspace, 'hello.txt'), 'hi there')
  return g
}

function deltas (events: readonly EventEnvelope[]): string[] {
  return events.flatMap((e) => e.event.kind === 'text.delta' ? [e.event.text] : [])
}

function systemMessage (g: TestGateway, index: number): string {
  const first = g.provider.requests[index]?.body.messages[0]
  assert.equal(first?.role, 'system')
  return first?.content ?? ''
}

const TEXT_CALL = 'Let me check that file.\n<tool_call>{"name":"file_read","arguments":{"path":"hello.txt"}}</tool_call>'

test('a text-protocol provider gets no tools on the wire and the protocol with the tool list in the system message', async (t) => {
  const g = await gateway(t, TEXT_PROVIDER)
  g.provider.enqueue({ text: 'Hello!' })
  await runTurn(g, { message: 'hi' })
  const request = g.provider.requests[0]
  assert.equal(request?.body.tools, undefined)
  const system = systemMessage(g, 0)
  assert.ok(system.includes('## Tool Use Protocol'), system)
  assert.ok(system.includes('### Available Tools'))
  for (const name of ['shell', 'file_read', 'file_write', 'http_request']) assert.ok(system.includes(`**${name}**:`), `${name} is listed`)
})

test('a <tool_call> reply is executed and its result goes back as a [Tool results] user message', async (t) => {
  const g = await gateway(t, TEXT_PROVIDER)
  g.provider.enqueue({ text: TEXT_CALL }, { text: 'The file says hi there.' })
  const { turn, events } = await runTurn(g, { message: 'read hello.txt' })
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:file_read', 'tool_result:file_read:ok', 'iteration', 'turn.completed'])
  assert.equal(turn.final_text, 'The file says hi there.')
  const call = events.find((e) => e.event.kind === 'tool_call')?.event
  assert.deepEqual(call?.kind === 'tool_call' && call.arguments, { path: 'hello.txt' })
  const messages = g.provider.requests[1]?.body.messages ?? []
  assert.deepEqual(messages.slice(1).map((m) => m.role), ['user', 'assistant', 'user'])
  assert.equal(messages[2]?.content, TEXT_CALL)
  const results = messages[3]?.content ?? ''
  assert.ok(results.startsWith('[Tool results]\n'), results)
  assert.equal(results, '[Tool results]\n<tool_result name="file_read">\nhi there\n</tool_result>\n')
  assert.equal(g.provider.requests[1]?.body.tools, undefined)
})

test('visible prose around a text-protocol call streams as text.delta without the call payload', async (t) => {
  const g = await gateway(t, TEXT_PROVIDER)
  g.provider.enqueue({ text: TEXT_CALL }, { text: 'Done.' })
  const { events } = await runTurn(g, { message: 'read hello.txt' })
  const firstCall = events.findIndex((e) => e.event.kind === 'tool_call')
  const before = deltas(events.slice(0, firstCall))
  // The last word waits for the scrubber to know it is whole: the text comes in two pieces.
  assert.equal(before.join(''), 'Let me check that file.')
  for (const text of deltas(events)) {
    assert.ok(!text.includes('<tool_call>') && !text.includes('"arguments"'), `payload leaked: ${text}`)
  }
})

test('strict_tool_parsing hides the protocol from a text provider and never executes text calls', async (t) => {
  const g = await gateway(t, { ...TEXT_PROVIDER, runtime_profiles: { default: { strict_tool_parsing: true } } })
  g.provider.enqueue({ text: TEXT_CALL })
  const { turn, events } = await runTurn(g, { message: 'read hello.txt' })
  const system = systemMessage(g, 0)
  assert.ok(!system.includes('## Tool Use Protocol'), system)
  assert.ok(!system.includes('**file_read**'))
  assert.equal(g.provider.requests[0]?.body.tools, undefined)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'turn.completed'])
  assert.equal(turn.status, 'completed')
  assert.equal(turn.final_text, TEXT_CALL)
  assert.deepEqual(turn.tool_calls, [])
  assert.equal(g.provider.requests.length, 1)
})

const MALFORMED = '<tool_call>{"name": "file_read", "arguments": {"path": }</tool_call>'

test('a malformed protocol reply is retried with a [Tool call parse error] user message and the corrected reply is used', async (t) => {
  const g = await gateway(t, TEXT_PROVIDER)
  g.provider.enqueue({ text: MALFORMED }, { text: TEXT_CALL }, { text: 'It says hi there.' })
  const { turn, events } = await runTurn(g, { message: 'read hello.txt' })
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'iteration', 'tool_call:file_read', 'tool_result:file_read:ok', 'iteration', 'turn.completed'])
  assert.equal(turn.final_text, 'It says hi there.')
  const retry = g.provider.requests[1]?.body.messages ?? []
  assert.deepEqual(retry.slice(1).map((m) => [m.role, m.content]), [['user', 'read hello.txt'], ['user', PARSE_ERROR_FEEDBACK]])
  assert.ok(PARSE_ERROR_FEEDBACK.startsWith('[Tool call parse error]'))
  for (const text of deltas(events)) assert.ok(!text.includes('<tool_call>'), `payload leaked: ${text}`)
})

test('a third malformed protocol reply ends the turn with the format-error fallback text', async (t) => {
  const g = await gateway(t, TEXT_PROVIDER)
  g.provider.enqueue({ text: MALFORMED }, { text: MALFORMED }, { text: MALFORMED })
  const { turn, events } = await runTurn(g, { message: 'read hello.txt' })
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'iteration', 'iteration', 'turn.completed'])
  assert.ok(MALFORMED_FALLBACK_TEXT.startsWith('I generated an internal tool-call format error'))
  assert.equal(turn.final_text, MALFORMED_FALLBACK_TEXT)
  assert.equal(deltas(events).join(''), MALFORMED_FALLBACK_TEXT)
  assert.equal(g.provider.requests.length, 3)
  const last = g.provider.requests[2]?.body.messages ?? []
  assert.deepEqual(last.slice(1).map((m) => m.content), ['read hello.txt', PARSE_ERROR_FEEDBACK, PARSE_ERROR_FEEDBACK])
  assert.deepEqual(turn.tool_calls, [])
})

test('a native provider streams its text as several text.delta events before the tool events', async (t) => {
  const g = await gateway(t)
  const text = 'Let me read the file for you right now.'
  g.provider.enqueue(
    { text, toolCalls: [{ id: 'c1', name: 'file_read', arguments: { path: 'hello.txt' } }] },
    { text: 'Done.' }
  )
  const { events } = await runTurn(g, { message: 'read hello.txt' })
  const firstCall = events.findIndex((e) => e.event.kind === 'tool_call')
  const before = deltas(events.slice(0, firstCall))
  assert.ok(before.length >= 2, `only ${before.length} text.delta events`)
  assert.equal(before.join(''), text)
  assert.deepEqual(events.slice(0, 2).map((e) => e.event.kind), ['turn.started', 'iteration'])
  assert.ok(events.slice(2, firstCall).every((e) => e.event.kind === 'text.delta'))
})

test('native arguments that are not JSON get an error result fed back to the model and the turn continues', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'c1', name: 'file_read', arguments: 'path=hello.txt' }] },
    { toolCalls: [{ id: 'c2', name: 'file_read', arguments: { path: 'hello.txt' } }] },
    { text: 'Got it on the second try.' }
  )
  const { turn, events } = await runTurn(g, { message: 'read hello.txt' })
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), [
    'turn.started', 'iteration', 'tool_call:file_read', 'tool_result:file_read:error',
    'iteration', 'tool_call:file_read', 'tool_result:file_read:ok', 'iteration', 'turn.completed'
  ])
  assert.equal(turn.final_text, 'Got it on the second try.')
  const feedback = g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')
  assert.equal(feedback?.tool_call_id, 'c1')
  assert.match(feedback?.content ?? '', /^Error: invalid arguments for 'file_read': arguments are not valid JSON/)
  const echoed = g.provider.requests[1]?.body.messages.find((m) => m.role === 'assistant')
  assert.equal(echoed?.tool_calls?.[0]?.function.arguments, 'path=hello.txt')
  assert.equal(turn.tool_calls[0]?.status, 'error')
})

test('arguments missing a required property get an error result naming it', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'file_read', arguments: {} }] }, { text: 'Sorry.' })
  const { events } = await runTurn(g, { message: 'read something' })
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:file_read', 'tool_result:file_read:error', 'iteration', 'turn.completed'])
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.equal(result?.kind === 'tool_result' && result.output, "Error: invalid arguments for 'file_read': (root) must have required property 'path'")
  assert.equal(g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')?.content, result?.kind === 'tool_result' ? result.output : null)
})

test('a schema-invalid call is never executed', async (t) => {
  const g = await gateway(t, { risk_profiles: { default: { level: 'full' } } })
  g.provider.enqueue({ toolCalls: [{ id: 'w1', name: 'file_write', arguments: { path: 'half.txt' } }] }, { text: 'Sorry.' })
  const { turn } = await runTurn(g, { message: 'write half.txt' })
  assert.equal(turn.tool_calls[0]?.status, 'error')
  assert.match(turn.tool_calls[0]?.output ?? '', /must have required property 'content'/)
  assert.equal(await access(join(g.workspace, 'half.txt')).then(() => true, () => false), false)
})

/** Text the fake provider streams as 20 pieces of 8 characters, one every 100 ms (2 s in all). */
const SLOW_ANSWER = 'Streaming answer piece by piece, so a reader sees it grow while the model is still writing it down here ok.'.padEnd(160, '.')

/** Runs a turn over WS and counts the text.delta events that arrived while the provider still streamed. */
async function deltasWhileStreaming (g: TestGateway): Promise<{ early: number, texts: string[] }> {
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go', session_id: 'live-text' })
  let early = 0
  const texts: string[] = []
  for (;;) {
    const frame = await ws.next((f) => f.type === 'event' && f.turn_id === accepted.turn_id &&
      (f.event.kind === 'text.delta' || ['turn.completed', 'turn.failed', 'turn.cancelled'].includes(f.event.kind)))
    if (frame.event.kind !== 'text.delta') break
    texts.push(frame.event.text)
    if (g.provider.open() > 0) early += 1
  }
  return { early, texts }
}

test('an agent with no tools streams its answer live', async (t) => {
  const g = await gateway(t, { agents: { default: { tools: [] } } })
  g.provider.enqueue({ text: SLOW_ANSWER, chunkDelayMs: 100 })
  const { early, texts } = await deltasWhileStreaming(g)
  assert.ok(early >= 5, `${early} of ${texts.length} text.delta events arrived while the answer streamed`)
  assert.equal(texts.join(''), SLOW_ANSWER)
  assert.equal(g.provider.requests[0]?.body.tools, undefined)
})

test('a text-protocol provider streams its prose live and no frame reaches a text.delta', async (t) => {
  const g = await gateway(t, TEXT_PROVIDER)
  const call = '\n<tool_call>{"name":"file_read","arguments":{"path":"hello.txt"}}</tool_call>\nafter the frame'
  g.provider.enqueue({ text: SLOW_ANSWER + call, chunkDelayMs: 100 }, { text: 'Done.' })
  const { early, texts } = await deltasWhileStreaming(g)
  assert.ok(early >= 5, `${early} of ${texts.length} text.delta events arrived while the answer streamed`)
  for (const text of texts) assert.ok(!/<tool_call|"arguments"|tool_call>/.test(text), `frame leaked: ${text}`)
  assert.equal(texts.join(''), `${SLOW_ANSWER}\nafter the frame${'Done.'}`)
})
