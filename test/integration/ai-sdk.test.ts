import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, readUIMessageStream,
  type ChatState, type ChatStatus, type UIMessage, type UIMessageChunk
} from 'ai'
import { shape } from '../helpers/gateway.js'
import { startProbeGateway } from '../helpers/tools.js'
import { finishedTurn, gate, turnEvents } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'
import { jwtAuth, mintToken } from '../helpers/tokens.js'

const risky = (label: string): { id: string, name: string, arguments: Record<string, unknown> } => ({ id: 'c1', name: 'risky', arguments: { label } })

function transport (url: string, headers: Record<string, string> = {}): DefaultChatTransport<UIMessage> {
  return new DefaultChatTransport<UIMessage>({ api: `${url}/v1/ai-sdk/chat`, headers })
}

const userMessage = (text: string): UIMessage => ({ id: 'u1', role: 'user', parts: [{ type: 'text', text }] })

/** Every chunk of a stream (the stream is teed so readUIMessageStream still gets it all). */
function recorded (stream: ReadableStream<UIMessageChunk>): { stream: ReadableStream<UIMessageChunk>, chunks: UIMessageChunk[] } {
  const chunks: UIMessageChunk[] = []
  const [a, b] = stream.tee()
  void (async () => { for await (const c of b) chunks.push(c) })()
  return { stream: a, chunks }
}

async function lastMessage (stream: ReadableStream<UIMessageChunk>, message?: UIMessage): Promise<UIMessage> {
  let last: UIMessage | undefined
  for await (const m of readUIMessageStream({ stream, ...(message === undefined ? {} : { message }) })) last = m
  assert.ok(last !== undefined)
  return last
}

/** What `addToolApprovalResponse` does to the message before the follow-up request. */
function respond (message: UIMessage, approvalId: string, approved: boolean): UIMessage {
  return {
    ...message,
    parts: message.parts.map((p) => 'approval' in p && p.state === 'approval-requested' && p.approval.id === approvalId
      ? { ...p, state: 'approval-responded', approval: { ...p.approval, approved } } as unknown as typeof p
      : p)
  }
}

test('DefaultChatTransport and readUIMessageStream: an approval request ends the stream, the approval response resumes the turn to its tool result and final text', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ text: 'Checking. ', toolCalls: [risky('x')] }, { text: 'All done.' })
  const chat = transport(g.url)
  const first = recorded(await chat.sendMessages({ chatId: 'chat-1', messages: [userMessage('check x')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined }))
  const assistant = await lastMessage(first.stream)
  assert.deepEqual(first.chunks.map((c) => c.type), [
    // The fake streams the text in two pieces; plain words go out as they come.
    'start', 'start-step', 'text-start', 'text-delta', 'text-delta', 'text-end',
    'tool-input-start', 'tool-input-available', 'tool-approval-request', 'data-tollgate-approval', 'finish-step', 'finish'
  ])
  const turnId = assistant.id
  assert.equal(assistant.role, 'assistant')
  const tool = assistant.parts.find((p) => p.type === 'dynamic-tool')
  assert.ok(tool !== undefined && tool.type === 'dynamic-tool' && tool.state === 'approval-requested')
  assert.deepEqual([tool.toolName, tool.input], ['risky', { label: 'x' }])
  const approvalId = tool.approval.id
  const display = assistant.parts.find((p) => p.type === 'data-tollgate-approval') as { data: { display: unknown, request_id: string } } | undefined
  assert.deepEqual(display?.data.display, [{ name: 'label', value: 'x' }])
  assert.equal(display?.data.request_id, approvalId)
  // The stream ended; the turn waits for the answer (the approval response below resumes it).
  assert.equal((await g.http('GET', `/v1/turns/${turnId}`)).body.status, 'running')
  assert.equal(probes.runs.length, 0)

  const answered = respond(assistant, approvalId, true)
  const second = recorded(await chat.sendMessages({
    chatId: 'chat-1', messages: [userMessage('check x'), answered], trigger: 'submit-message', messageId: answered.id, abortSignal: undefined
  }))
  const final = await lastMessage(second.stream, answered)
  assert.deepEqual(second.chunks.map((c) => c.type), [
    'start', 'start-step', 'tool-output-available', 'finish-step', 'start-step', 'text-start', 'text-delta', 'text-delta', 'text-end', 'finish-step', 'finish'
  ])
  assert.equal(final.id, turnId)
  const done = final.parts.find((p) => p.type === 'dynamic-tool')
  assert.ok(done !== undefined && done.type === 'dynamic-tool' && done.state === 'output-available')
  assert.equal(done.output, 'done x')
  const texts = final.parts.filter((p) => p.type === 'text').map((p) => p.type === 'text' ? p.text : '')
  assert.deepEqual(texts, ['Checking. ', 'All done.'])
  assert.equal(probes.runs.length, 1)
  const turn = await finishedTurn(g, turnId)
  assert.deepEqual([turn.status, turn.final_text, turn.session_id], ['completed', 'All done.', 'chat-1'])
  assert.deepEqual([turn.approvals[0].decision, turn.approvals[0].channel], ['yes', 'ai-sdk'])
  assert.deepEqual(shape(await turnEvents(g, turnId)), [
    'turn.started', 'iteration', 'approval.requested:risky', 'approval.resolved:yes',
    'tool_call:risky', 'tool_result:risky:ok', 'iteration', 'turn.completed'
  ])
})

/** The smallest ChatState: what a UI framework binding keeps. */
class MemoryState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready'
  error: Error | undefined = undefined
  messages: UIMessage[] = []
  pushMessage = (m: UIMessage): void => { this.messages = [...this.messages, m] }
  popMessage = (): void => { this.messages = this.messages.slice(0, -1) }
  replaceMessage = (i: number, m: UIMessage): void => { this.messages = this.messages.map((x, j) => j === i ? m : x) }
  snapshot = <T>(thing: T): T => structuredClone(thing)
}

class Chat extends AbstractChat<UIMessage> {
  readonly memory: MemoryState
  constructor (init: ConstructorParameters<typeof AbstractChat<UIMessage>>[0] & { state: MemoryState }) {
    super(init)
    this.memory = init.state
  }
}

test('Chat from ai: addToolApprovalResponse denying the call sends the follow-up request itself and the denial reaches the turn', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('y')] }, { text: 'Skipped it.' })
  const chat = new Chat({
    id: 'chat-2',
    transport: transport(g.url),
    state: new MemoryState(),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses
  })
  await chat.sendMessage({ text: 'do y' })
  const asked = chat.memory.messages.at(-1)?.parts.find((p) => p.type === 'dynamic-tool')
  assert.ok(asked !== undefined && asked.type === 'dynamic-tool' && asked.state === 'approval-requested')
  await chat.addToolApprovalResponse({ id: asked.approval.id, approved: false })
  await eventually(() => chat.status === 'ready' && chat.memory.messages.at(-1)?.parts.some((p) => p.type === 'text') === true, { what: 'the follow-up response' })
  const final = chat.memory.messages.at(-1)
  assert.ok(final !== undefined)
  assert.equal(chat.memory.messages.length, 2)
  const denied = final.parts.find((p) => p.type === 'dynamic-tool')
  assert.equal(denied?.type === 'dynamic-tool' && denied.state, 'output-denied')
  assert.deepEqual(final.parts.filter((p) => p.type === 'text').map((p) => p.type === 'text' ? p.text : ''), ['Skipped it.'])
  assert.equal(probes.runs.length, 0)
  const turn = await finishedTurn(g, final.id)
  assert.deepEqual([turn.approvals[0].decision, turn.approvals[0].channel, turn.tool_calls[0].status], ['no', 'ai-sdk', 'denied'])
})

test('a chat whose provider answers without streaming gets every text of the turn, before and after its tool call', async (t) => {
  const { g } = await startProbeGateway(t, { providers: { fake: { stream: false } } })
  g.provider.enqueue({ text: 'Let me check.', toolCalls: [{ id: 'c1', name: 'probe', arguments: { label: 'a' } }] }, { text: 'It says done a.' })
  const { stream, chunks } = recorded(await transport(g.url).sendMessages({
    chatId: 'chat-plain', messages: [userMessage('check a')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined
  }))
  const message = await lastMessage(stream)
  assert.equal(g.provider.requests[0]?.body.stream, false, 'the provider was asked for one whole answer')
  assert.deepEqual(message.parts.filter((p) => p.type === 'text').map((p) => p.type === 'text' ? p.text : ''), ['Let me check.', 'It says done a.'])
  assert.deepEqual(chunks.map((c) => c.type), [
    'start', 'start-step', 'text-start', 'text-delta', 'text-end', 'tool-input-start', 'tool-input-available', 'tool-output-available',
    'finish-step', 'start-step', 'text-start', 'text-delta', 'text-end', 'finish-step', 'finish'
  ], 'each text in one piece: its last word is plain, so the scrubber need not wait for the blank after it')
})

test('a failing turn ends the UI message stream with an error chunk', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ status: 500 })
  const { stream, chunks } = recorded(await transport(g.url).sendMessages({
    chatId: 'chat-3', messages: [userMessage('hi')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined
  }))
  await lastMessage(stream)
  await eventually(() => chunks.some((c) => c.type === 'error'), { what: 'the error chunk' })
  assert.deepEqual(chunks.map((c) => c.type), ['start', 'start-step', 'error'])
  const error = chunks.find((c) => c.type === 'error')
  assert.match(error?.type === 'error' ? error.errorText : '', /^PROVIDER_[A-Z_]+: /)
})

test('bad AI SDK chat requests are refused with problem JSON and leave no session or turn behind', async (t) => {
  const { g } = await startProbeGateway(t, jwtAuth())
  const alice = await mintToken({ sub: 'alice' })
  const bob = await mintToken({ sub: 'bob' })
  g.provider.enqueue({ text: 'hi bob' })
  const bobs = await lastMessage(await transport(g.url, { authorization: `Bearer ${bob}` }).sendMessages({
    chatId: 'chat-b', messages: [userMessage('hello')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined
  }))
  assert.equal(bobs.parts.find((p) => p.type === 'text')?.type, 'text')

  const body = (id: string, messages: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> => ({ id, messages, trigger: 'submit-message', ...extra })
  const answer = { id: 'a1', role: 'assistant', parts: [{ type: 'dynamic-tool', toolName: 'risky', toolCallId: 'c1', state: 'approval-responded', input: {}, approval: { id: 'apr_x', approved: true } }] }
  const cases: Array<[string, unknown, number, string]> = [
    ['no messages', { id: 'chat-x' }, 400, 'INVALID_REQUEST'],
    ['a message without parts', body('chat-x', [{ id: 'u', role: 'user' }]), 400, 'INVALID_REQUEST'],
    ['regenerate', body('chat-x', [userMessage('hi')], { trigger: 'regenerate-message' }), 400, 'INVALID_REQUEST'],
    ['an oversized message', body('chat-x', [userMessage('x'.repeat(100_001))]), 413, 'PAYLOAD_TOO_LARGE'],
    ['another principal\'s chat', body('chat-b', [userMessage('hi')]), 403, 'FORBIDDEN'],
    ['an approval answer in another principal\'s chat', body('chat-b', [userMessage('hi'), answer]), 404, 'SESSION_NOT_FOUND'],
    ['an approval answer without a decision', body('chat-x', [{ ...answer, parts: [{ ...answer.parts[0], approval: { id: 'apr_x' } }] }]), 400, 'INVALID_DECISION']
  ]
  for (const [what, payload, status, code] of cases) {
    const res = await g.http('POST', '/v1/ai-sdk/chat', payload, { authorization: `Bearer ${alice}` })
    assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body)}`)
    assert.equal(res.body.code, code, what)
  }
  // The real transport surfaces the refusal as an error carrying the problem.
  await assert.rejects(transport(g.url, { authorization: `Bearer ${alice}` }).sendMessages({
    chatId: 'chat-b', messages: [userMessage('hi')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined
  }), /FORBIDDEN/)
  assert.equal((await g.http('GET', '/v1/sessions/chat-x', undefined, { authorization: `Bearer ${alice}` })).status, 404)
  assert.equal((await g.http('GET', '/v1/sessions/chat-b', undefined, { authorization: `Bearer ${bob}` })).body.turn_ids.length, 1)
  assert.equal(g.gateway.turns.activeCount, 0)
  assert.equal(g.provider.requests.length, 1)
})

test('an AI SDK client that aborts its request cancels the turn after the disconnect grace, like an SSE owner', async (t) => {
  const { g } = await startProbeGateway(t, { turns: { disconnect_grace_ms: 200 } })
  const held = gate()
  g.provider.enqueue({ text: 'never', gate: held.promise })
  const abort = new AbortController()
  const stream = await transport(g.url).sendMessages({ chatId: 'chat-4', messages: [userMessage('wait')], trigger: 'submit-message', messageId: undefined, abortSignal: abort.signal })
  const reader = stream.getReader()
  const start = await reader.read()
  assert.equal(start.value?.type, 'start')
  const turnId = start.value?.type === 'start' ? start.value.messageId ?? '' : ''
  abort.abort()
  await reader.read().catch(() => {})
  const cutAt = Date.now()
  const turn = await finishedTurn(g, turnId)
  held.open()
  assert.ok(Date.now() - cutAt >= 150, 'the grace passed before the cancel')
  assert.equal(turn.status, 'cancelled')
  assert.deepEqual((await turnEvents(g, turnId)).at(-1)?.event, { kind: 'turn.cancelled', reason: 'owner connection closed' })
})

test('two approvals in one turn: each ends a stream, each answer resumes the same assistant message, both tools run', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('one')] }, { toolCalls: [{ id: 'c2', name: 'risky', arguments: { label: 'two' } }] }, { text: 'Both done.' })
  const chat = new Chat({
    id: 'chat-5',
    transport: transport(g.url),
    state: new MemoryState(),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses
  })
  const waitingApproval = (): { approval: { id: string } } | undefined => {
    const part = chat.memory.messages.at(-1)?.parts.find((p) => p.type === 'dynamic-tool' && p.state === 'approval-requested')
    return part as { approval: { id: string } } | undefined
  }
  await chat.sendMessage({ text: 'do both' })
  const first = waitingApproval()
  assert.ok(first !== undefined)
  await chat.addToolApprovalResponse({ id: first.approval.id, approved: true })
  await eventually(() => chat.status === 'ready' && waitingApproval() !== undefined, { what: 'the second approval request' })
  const second = waitingApproval()
  assert.ok(second !== undefined && second.approval.id !== first.approval.id)
  await chat.addToolApprovalResponse({ id: second.approval.id, approved: true })
  await eventually(() => chat.status === 'ready' && chat.memory.messages.at(-1)?.parts.some((p) => p.type === 'text') === true, { what: 'the final text' })
  const final = chat.memory.messages.at(-1)
  assert.ok(final !== undefined)
  assert.equal(chat.memory.messages.length, 2)
  const tools = final.parts.filter((p) => p.type === 'dynamic-tool')
  assert.deepEqual(tools.map((p) => p.type === 'dynamic-tool' && p.state === 'output-available' ? p.output : null), ['done one', 'done two'])
  assert.deepEqual(probes.runs.map((r) => r.label), ['one', 'two'])
  const turn = await finishedTurn(g, final.id)
  assert.deepEqual([turn.status, turn.approvals.map((a: { decision: string }) => a.decision)], ['completed', ['yes', 'yes']])
})

test('a denial with the person\'s reason: the model reads the reason with the denial', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('fri')] }, { text: 'Understood.' })
  const chat = new Chat({ id: 'chat-6', transport: transport(g.url), state: new MemoryState(), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses })
  await chat.sendMessage({ text: 'do fri' })
  const asked = chat.memory.messages.at(-1)?.parts.find((p) => p.type === 'dynamic-tool')
  assert.ok(asked !== undefined && asked.type === 'dynamic-tool' && asked.state === 'approval-requested')
  await chat.addToolApprovalResponse({ id: asked.approval.id, approved: false, reason: 'not on Fridays' })
  await eventually(() => chat.status === 'ready' && chat.memory.messages.at(-1)?.parts.some((p) => p.type === 'text') === true, { what: 'the follow-up response' })
  assert.equal(probes.runs.length, 0)
  const toolMessage = g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')
  assert.equal(toolMessage?.content, 'Denied by user. Their reason: not on Fridays')
  const turn = await finishedTurn(g, chat.memory.messages.at(-1)?.id ?? '')
  assert.deepEqual([turn.approvals[0].decision, turn.tool_calls[0].status], ['no', 'denied'])
})

test('an approval whose id the request lists in tollgate.always answers always: the tool is granted for the session', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('a')] }, { text: 'Granted.' })
  const chat = new Chat({ id: 'chat-7', transport: transport(g.url), state: new MemoryState(), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses })
  await chat.sendMessage({ text: 'do a' })
  const asked = chat.memory.messages.at(-1)?.parts.find((p) => p.type === 'dynamic-tool')
  assert.ok(asked !== undefined && asked.type === 'dynamic-tool' && asked.state === 'approval-requested')
  const id = asked.approval.id
  await chat.addToolApprovalResponse({ id, approved: true, options: { body: { tollgate: { always: [id] } } } })
  await eventually(() => chat.status === 'ready' && chat.memory.messages.at(-1)?.parts.some((p) => p.type === 'text') === true, { what: 'the follow-up response' })
  assert.deepEqual(probes.runs.map((r) => r.label), ['a'])
  const turn = await finishedTurn(g, chat.memory.messages.at(-1)?.id ?? '')
  assert.equal(turn.approvals[0].decision, 'always')
  const session = (await g.http('GET', '/v1/sessions/chat-7')).body
  assert.deepEqual(session.always_allowed, [{ tool: 'risky' }])
})

test('addToolOutput on a call waiting for approval answers edit: the given output is the call\'s result and the tool does not run', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('e')] }, { text: 'Using your result.' })
  const chat = new Chat({
    id: 'chat-8',
    transport: transport(g.url),
    state: new MemoryState(),
    sendAutomaticallyWhen: ({ messages }) => messages.at(-1)?.parts.some((p) => p.type === 'dynamic-tool' && p.state === 'output-available') === true &&
      messages.at(-1)?.parts.some((p) => p.type === 'text') !== true
  })
  await chat.sendMessage({ text: 'do e' })
  const asked = chat.memory.messages.at(-1)?.parts.find((p) => p.type === 'dynamic-tool')
  assert.ok(asked !== undefined && asked.type === 'dynamic-tool' && asked.state === 'approval-requested')
  await chat.addToolOutput({ tool: 'risky', toolCallId: asked.toolCallId, output: 'skipped by hand' })
  await eventually(() => chat.status === 'ready' && chat.memory.messages.at(-1)?.parts.some((p) => p.type === 'text') === true, { what: 'the follow-up response' })
  assert.equal(probes.runs.length, 0)
  const toolMessage = g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')
  assert.equal(toolMessage?.content, 'skipped by hand')
  const turn = await finishedTurn(g, chat.memory.messages.at(-1)?.id ?? '')
  assert.deepEqual([turn.approvals[0].decision, turn.tool_calls[0].status], ['edit', 'replaced'])
})
