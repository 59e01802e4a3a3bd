import { test } from 'node:test'
import assert from 'node:assert/strict'
import { HttpAgent } from '@ag-ui/client'
import type { BaseEvent } from '@ag-ui/core'
import { shape } from '../helpers/gateway.js'
import { startProbeGateway } from '../helpers/tools.js'
import { finishedTurn, gate, turnEvents } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'
import { jwtAuth, mintToken } from '../helpers/tokens.js'

const risky = (label: string): { id: string, name: string, arguments: Record<string, unknown> } => ({ id: 'c1', name: 'risky', arguments: { label } })

/** A real AG-UI client; every event it received, in order. */
function agent (
  url: string, threadId: string, message: string, headers: Record<string, string> = {}
): { agent: HttpAgent, events: BaseEvent[] } {
  const a = new HttpAgent({ url: `${url}/v1/ag-ui`, threadId, headers, initialMessages: [{ id: 'u1', role: 'user', content: message }] })
  return { agent: a, events: [] }
}

/**
 * The events' types, a run of TEXT_MESSAGE_CONTENT as one: how streamed text is cut into pieces
 * is the provider's and the scrubber's business, not the adapter's contract.
 */
function types (events: readonly BaseEvent[]): string[] {
  const out: string[] = []
  for (const e of events) {
    const type = e.type === 'CUSTOM' ? `CUSTOM:${(e as unknown as { name: string }).name}` : e.type
    if (type === 'TEXT_MESSAGE_CONTENT' && out.at(-1) === type) continue
    out.push(type)
  }
  return out
}

test('an HttpAgent run in custom approval mode gets the approval as a CUSTOM event, answered over REST while the stream is open', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ text: 'Checking. ', toolCalls: [risky('x')] }, { text: 'All done.' })
  const { agent: a, events } = agent(g.url, 'thread-custom', 'please check x')
  const answers: number[] = []
  const result = await a.runAgent({ runId: 'run-1', forwardedProps: { tollgate: { approvals: 'custom' } } }, {
    onEvent: ({ event }) => { events.push(event) },
    onCustomEvent: async ({ event }) => {
      if (event.name !== 'tollgate.approval.requested') return
      const value = event.value as {
        request_id: string, tool: string, display: Array<{ name: string, value: string }>, answer: { path: string }
      }
      assert.equal(value.tool, 'risky')
      assert.deepEqual(value.display, [{ name: 'label', value: 'x' }])
      const res = await g.http('POST', value.answer.path, { decision: 'yes' })
      answers.push(res.status)
    }
  })
  assert.deepEqual(answers, [200])
  assert.deepEqual(types(events), [
    'RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END',
    'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'CUSTOM:tollgate.approval.requested', 'CUSTOM:tollgate.approval.resolved',
    'TOOL_CALL_RESULT', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED'
  ])
  const started = events[0] as unknown as { threadId: string, runId: string, metadata: { tollgate: { turn_id: string } } }
  assert.deepEqual([started.threadId, started.runId], ['thread-custom', 'run-1'])
  const turnId = started.metadata.tollgate.turn_id
  const toolResult = events.find((e) => e.type === 'TOOL_CALL_RESULT') as unknown as { content: string, toolCallId: string }
  assert.equal(toolResult.content, 'done x')
  const finished = events.at(-1) as unknown as { result: string, outcome: { type: string } }
  assert.deepEqual([finished.result, finished.outcome.type], ['All done.', 'success'])
  assert.equal(result.result, 'All done.')
  assert.equal(probes.runs.length, 1)
  // The client's own message list holds the text, the tool call and its result.
  assert.deepEqual(a.messages.map((m) => m.role), ['user', 'assistant', 'assistant', 'tool', 'assistant'])
  const turn = await g.http('GET', `/v1/turns/${turnId}`)
  assert.equal(turn.body.session_id, 'thread-custom')
  assert.deepEqual([turn.body.approvals[0].decision, turn.body.approvals[0].channel], ['yes', 'rest'])
})

test('an approval interrupts the AG-UI run; the next run resumes the same turn with the answer and streams its tool result', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('y')] }, { text: 'Finished.' })
  const { agent: a, events } = agent(g.url, 'thread-int', 'do y')
  let seenByClient: string | undefined
  await a.runAgent({ runId: 'run-a' }, {
    onEvent: ({ event }) => { events.push(event) },
    onRunFinishedEvent: (finished) => { if (finished.outcome === 'interrupt') seenByClient = finished.interrupts[0]?.id }
  })
  assert.deepEqual(types(events), ['RUN_STARTED', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'RUN_FINISHED'])
  type Outcome = { outcome: { type: string, interrupts: Array<{ id: string, reason: string, toolCallId: string, expiresAt: string }> } }
  const interrupted = events.at(-1) as unknown as Outcome
  assert.equal(interrupted.outcome.type, 'interrupt')
  const [interrupt] = interrupted.outcome.interrupts
  assert.ok(interrupt !== undefined)
  assert.equal(seenByClient, interrupt.id)
  assert.deepEqual([interrupt.reason, interrupt.toolCallId], ['tool_approval', (events[1] as unknown as { toolCallId: string }).toolCallId])
  // The run ended; the Tollgate turn did not: it waits for the answer with the request pending.
  // (The resume below, answered and completed, shows it was still waiting.)
  const turnId = (events[0] as unknown as { metadata: { tollgate: { turn_id: string } } }).metadata.tollgate.turn_id
  assert.equal((await g.http('GET', `/v1/turns/${turnId}`)).body.status, 'running')
  assert.equal(probes.runs.length, 0)

  const resumed: BaseEvent[] = []
  const result = await a.runAgent({ runId: 'run-b', resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { decision: 'yes' } }] }, {
    onEvent: ({ event }) => { resumed.push(event) }
  })
  assert.deepEqual(types(resumed), [
    'RUN_STARTED', 'CUSTOM:tollgate.approval.resolved', 'TOOL_CALL_RESULT',
    'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED'
  ])
  assert.equal((resumed[2] as unknown as { content: string }).content, 'done y')
  assert.equal(result.result, 'Finished.')
  assert.equal(probes.runs.length, 1)
  const turn = await finishedTurn(g, turnId)
  assert.equal(turn.status, 'completed')
  assert.deepEqual([turn.approvals[0].decision, turn.approvals[0].channel], ['yes', 'ag-ui'])
  const session = await g.http('GET', '/v1/sessions/thread-int')
  assert.deepEqual(session.body.turn_ids, [turnId])
  assert.deepEqual(shape(await turnEvents(g, turnId)), [
    'turn.started', 'iteration', 'approval.requested:risky', 'approval.resolved:yes',
    'tool_call:risky', 'tool_result:risky:ok', 'iteration', 'turn.completed'
  ])
})

test('a resume entry with status cancelled denies the call, and the run says so in the tool result', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('z')] }, { text: 'Understood.' })
  const { agent: a, events } = agent(g.url, 'thread-deny', 'do z')
  await a.runAgent({ runId: 'run-1' }, { onEvent: ({ event }) => { events.push(event) } })
  const interruptId = (events.at(-1) as unknown as { outcome: { interrupts: Array<{ id: string }> } }).outcome.interrupts[0]?.id ?? ''
  const resumed: BaseEvent[] = []
  await a.runAgent({ runId: 'run-2', resume: [{ interruptId, status: 'cancelled' }] }, { onEvent: ({ event }) => { resumed.push(event) } })
  const resolved = resumed[1] as unknown as { value: { decision: string } }
  assert.equal(resolved.value.decision, 'no')
  const result = resumed.find((e) => e.type === 'TOOL_CALL_RESULT') as unknown as { metadata: { tollgate: { status: string } } }
  assert.equal(result.metadata.tollgate.status, 'denied')
  assert.equal(probes.runs.length, 0)
})

test('bad AG-UI input is refused with problem JSON before any stream, and leaves no session or turn behind', async (t) => {
  const { g } = await startProbeGateway(t, jwtAuth())
  const alice = await mintToken({ sub: 'alice' })
  const bob = await mintToken({ sub: 'bob' })
  const post = async (token: string, body: unknown): Promise<{ status: number, body: any }> =>
    await g.http('POST', '/v1/ag-ui', body, { authorization: `Bearer ${token}`, accept: 'text/event-stream' })
  const input = (threadId: string, content: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> =>
    ({ threadId, runId: 'r1', messages: [{ id: 'm1', role: 'user', content }], tools: [], context: [], state: {}, ...extra })

  // bob owns thread-b (his first run finishes normally).
  g.provider.enqueue({ text: 'hi bob' })
  const mine = agent(g.url, 'thread-b', 'hello', { authorization: `Bearer ${bob}` })
  await mine.agent.runAgent({ runId: 'rb' })
  assert.equal(mine.agent.messages.at(-1)?.content, 'hi bob')

  const cases: Array<[string, unknown, number, string]> = [
    ['no messages field', { threadId: 'thread-x', runId: 'r1' }, 400, 'INVALID_REQUEST'],
    ['a thread id with a slash', input('a/b', 'hi'), 400, 'INVALID_REQUEST'],
    ['a frontend tool without a name', input('thread-x', 'hi', { tools: [{ description: 'ask', parameters: {} }] }), 400, 'INVALID_REQUEST'],
    ['last message from the assistant', { ...input('thread-x', 'hi'), messages: [{ id: 'm1', role: 'assistant', content: 'x' }] }, 400, 'INVALID_REQUEST'],
    ['an oversized message', input('thread-x', 'x'.repeat(100_001)), 413, 'PAYLOAD_TOO_LARGE'],
    ['another principal\'s thread', input('thread-b', 'hi'), 403, 'FORBIDDEN'],
    ['resume of another principal\'s thread', input('thread-b', 'hi', { resume: [{ interruptId: 'apr_1', status: 'resolved', payload: { approved: true } }] }), 404, 'SESSION_NOT_FOUND'],
    ['resume with an unusable payload', input('thread-x', 'hi', { resume: [{ interruptId: 'apr_1', status: 'resolved', payload: { ok: 1 } }] }), 400, 'INVALID_DECISION']
  ]
  for (const [what, body, status, code] of cases) {
    const res = await post(alice, body)
    assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body)}`)
    assert.equal(res.body.code, code, what)
  }
  const frontendTools = await post(alice, input('thread-x', 'hi', { tools: [{ name: 'bad name', description: 'ask', parameters: {} }] }))
  assert.match(frontendTools.body.detail ?? frontendTools.body.title, /a frontend tool needs a name/)
  // The real client surfaces the refusal as a failed run.
  const refused = agent(g.url, 'thread-b', 'hi', { authorization: `Bearer ${alice}` })
  await assert.rejects(refused.agent.runAgent({ runId: 'r2' }), /403/)
  // Nothing was created: alice has no session, bob's has only his turn, no turn is running.
  assert.equal((await g.http('GET', '/v1/sessions/thread-x', undefined, { authorization: `Bearer ${alice}` })).status, 404)
  assert.equal((await g.http('GET', '/v1/sessions/thread-b', undefined, { authorization: `Bearer ${bob}` })).body.turn_ids.length, 1)
  assert.equal(g.gateway.turns.activeCount, 0)
  assert.equal(g.provider.requests.length, 1)
  // Unauthenticated: 401 before anything else.
  assert.equal((await g.http('POST', '/v1/ag-ui', input('thread-x', 'hi'))).status, 401)
})

test('an AG-UI client that aborts its run cancels the turn like an SSE owner going away', async (t) => {
  const { g } = await startProbeGateway(t)
  const held = gate()
  g.provider.enqueue({ text: 'never', gate: held.promise })
  const { agent: a, events } = agent(g.url, 'thread-abort', 'wait')
  const run = a.runAgent({ runId: 'run-1' }, { onEvent: ({ event }) => { events.push(event) } })
  await eventually(() => events.length > 0, { what: 'RUN_STARTED' })
  const turnId = (events[0] as unknown as { metadata: { tollgate: { turn_id: string } } }).metadata.tollgate.turn_id
  a.abortRun()
  await run.catch(() => {})
  const turn = await finishedTurn(g, turnId)
  held.open()
  assert.equal(turn.status, 'cancelled')
  const log = await turnEvents(g, turnId)
  const last = log.at(-1)?.event
  assert.deepEqual(last, { kind: 'turn.cancelled', reason: 'owner connection closed' })
})

/** Runs until the approval interrupt; returns the interrupt id and the turn id. */
async function untilInterrupt (a: HttpAgent, runId: string): Promise<{ interruptId: string, turnId: string }> {
  const events: BaseEvent[] = []
  await a.runAgent({ runId }, { onEvent: ({ event }) => { events.push(event) } })
  const finished = events.at(-1) as unknown as { outcome: { type: string, interrupts: Array<{ id: string }> } }
  assert.equal(finished.outcome.type, 'interrupt')
  return {
    interruptId: finished.outcome.interrupts[0]?.id ?? '',
    turnId: (events[0] as unknown as { metadata: { tollgate: { turn_id: string } } }).metadata.tollgate.turn_id
  }
}

test('resuming needs approvals:answer, and the resuming request owns the turn again: aborting it cancels the turn', async (t) => {
  const { g, probes } = await startProbeGateway(t, jwtAuth())
  const full = await mintToken({ sub: 'carol' })
  const writer = await mintToken({ sub: 'carol', scopes: ['turns:write', 'turns:read'] })
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: 'slow', ms: 10_000 } }] })
  const a = new HttpAgent({ url: `${g.url}/v1/ag-ui`, threadId: 'thread-own', headers: { authorization: `Bearer ${full}` } })
  a.addMessage({ id: 'u1', role: 'user', content: 'run slow' })
  const { interruptId, turnId } = await untilInterrupt(a, 'run-1')

  const resume = { threadId: 'thread-own', runId: 'run-2', messages: [], tools: [], context: [], state: {}, resume: [{ interruptId, status: 'resolved', payload: { decision: 'yes' } }] }
  const refused = await g.http('POST', '/v1/ag-ui', resume, { authorization: `Bearer ${writer}` })
  assert.deepEqual([refused.status, refused.body.code], [403, 'FORBIDDEN'])
  const pending = await g.http('GET', `/v1/turns/${turnId}`, undefined, { authorization: `Bearer ${full}` })
  assert.deepEqual([pending.body.status, pending.body.approvals.length], ['running', 0])

  const events: BaseEvent[] = []
  const run = a.runAgent({ runId: 'run-3', resume: [{ interruptId, status: 'resolved', payload: { decision: 'yes' } }] }, {
    onEvent: ({ event }) => { events.push(event) }
  })
  await eventually(() => probes.runs.length === 1, { what: 'the approved tool to start' })
  a.abortRun()
  await run.catch(() => {})
  let turn: any
  await eventually(async () => {
    turn = (await g.http('GET', `/v1/turns/${turnId}`, undefined, { authorization: `Bearer ${full}` })).body
    return turn.status !== 'running'
  }, { what: 'the turn to end' })
  assert.equal(turn.status, 'cancelled')
  assert.equal(turn.tool_calls[0].status, 'interrupted')
  assert.equal(probes.runs[0]?.aborted, true)
})

test('an interrupt that expired is cancelled by the client (as @ag-ui/client demands): the resumed run shows the expiry and the rest of the turn', async (t) => {
  const { g, probes } = await startProbeGateway(t, { turns: { approval_timeout_ms: 200 } })
  g.provider.enqueue({ toolCalls: [risky('late')] }, { text: 'It was not approved in time.' })
  const a = new HttpAgent({ url: `${g.url}/v1/ag-ui`, threadId: 'thread-late' })
  a.addMessage({ id: 'u1', role: 'user', content: 'do late' })
  const { interruptId, turnId } = await untilInterrupt(a, 'run-1')
  const expired = await finishedTurn(g, turnId)
  assert.equal(expired.approvals[0].decision, 'expired')
  const events: BaseEvent[] = []
  const result = await a.runAgent({ runId: 'run-2', resume: [{ interruptId, status: 'cancelled' }] }, {
    onEvent: ({ event }) => { events.push(event) }
  })
  assert.deepEqual(types(events), [
    'RUN_STARTED', 'CUSTOM:tollgate.approval.resolved', 'TOOL_CALL_RESULT',
    'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED'
  ])
  assert.equal((events[1] as unknown as { value: { decision: string } }).value.decision, 'expired')
  assert.equal((events[2] as unknown as { metadata: { tollgate: { status: string } } }).metadata.tollgate.status, 'denied')
  assert.equal(result.result, 'It was not approved in time.')
  assert.equal(probes.runs.length, 0)
})

test('a turn that fails after the run started ends the AG-UI stream with RUN_ERROR carrying the Tollgate code', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ status: 500 })
  const a = new HttpAgent({ url: `${g.url}/v1/ag-ui`, threadId: 'thread-fail' })
  a.addMessage({ id: 'u1', role: 'user', content: 'hi' })
  const events: BaseEvent[] = []
  let runError: { code?: string, message: string } | undefined
  await a.runAgent({ runId: 'run-1' }, {
    onEvent: ({ event }) => { events.push(event) },
    onRunErrorEvent: ({ event }) => { runError = event }
  }).catch(() => {})
  assert.deepEqual(types(events), ['RUN_STARTED', 'RUN_ERROR'])
  assert.match(runError?.code ?? '', /^PROVIDER_/)
  const turnId = (events[0] as unknown as { metadata: { tollgate: { turn_id: string } } }).metadata.tollgate.turn_id
  const turn = await finishedTurn(g, turnId)
  assert.deepEqual([turn.status, turn.error.code], ['failed', runError?.code])
})

test('a resume denying with a reason passes the person\'s reason to the model with the denial', async (t) => {
  const { g, probes } = await startProbeGateway(t)
  g.provider.enqueue({ toolCalls: [risky('r')] }, { text: 'Fine.' })
  const { agent: a, events } = agent(g.url, 'thread-reason', 'do r')
  await a.runAgent({ runId: 'run-1' }, { onEvent: ({ event }) => { events.push(event) } })
  const interruptId = (events.at(-1) as unknown as { outcome: { interrupts: Array<{ id: string }> } }).outcome.interrupts[0]?.id ?? ''
  await a.runAgent({ runId: 'run-2', resume: [{ interruptId, status: 'resolved', payload: { decision: 'no', reason: 'use the staging copy' } }] })
  assert.equal(probes.runs.length, 0)
  const toolMessage = g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')
  assert.equal(toolMessage?.content, 'Denied by user. Their reason: use the staging copy')
})
