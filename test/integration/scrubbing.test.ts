import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { ObserverEvent } from '../../src/observe/observer.js'
import { defineTool, ok, type Tool } from '../../src/tools/contract.js'
import { startGateway } from '../helpers/gateway.js'
import { captureLogs } from '../helpers/log-capture.js'
import { jwtAuth, mintToken } from '../helpers/tokens.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'
import { turnEvents } from '../helpers/turns.js'

// Planted secrets: a vendor API key shape, a password-named field, a bearer header, a GitHub token.
const API_KEY = 'sk-live0123456789abcdefghijKLMN'
const PASSWORD = 'hunter2-correct-horse-battery'
const BEARER = 'abcdefgh12345678zyxwvuts'
const GITHUB = 'ghp_0123456789abcdefghijABCDEFGHIJ'
const SECRETS = [API_KEY, PASSWORD, BEARER, GITHUB]

/** A careless extension tool: it logs its arguments and echoes credentials in its output. */
function leakyTool (): Tool {
  return defineTool({
    name: 'leaky',
    description: 'calls a service with credentials',
    parameters: {
      type: 'object',
      properties: { command: { type: 'string' }, password: { type: 'string' } },
      required: ['command'],
      additionalProperties: false
    },
    async execute (args, ctx) {
      ctx.log.info({ args }, 'leaky called')
      ctx.log.debug(`leaky raw arguments ${JSON.stringify(args)}`)
      return ok(`connected with api_key=${API_KEY}\nrefresh token: ${GITHUB}\npassword=${String(args.password)}`)
    }
  })
}

const leakyCall = {
  id: 'c1',
  name: 'leaky',
  arguments: { command: `curl -H 'Authorization: Bearer ${BEARER}' https://api.example/v1?key=${API_KEY}`, password: PASSWORD }
}

function assertClean (where: string, text: string): void {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `${where} contains ${secret}`)
}

test('secrets in tool arguments and output never reach logs, observers, events or the turn record', async (t) => {
  const logs = captureLogs('trace')
  const observed: ObserverEvent[] = []
  const g = await startGateway({
    tools: [leakyTool()],
    overrides: { log: { level: 'trace' }, agents: { default: { tools: ['leaky'] } }, risk_profiles: { default: { auto_approve: ['leaky'] } } },
    logger: logs.logger,
    observers: [{ record: (e) => { observed.push(e) } }]
  })
  t.after(() => g.close())
  g.provider.enqueue({ toolCalls: [leakyCall] }, { text: 'all done' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'deploy it' })
  const events = await ws.waitForTerminal(accepted.turn_id)
  const turn = await g.http('GET', `/v1/turns/${accepted.turn_id as string}`)

  // The data path is untouched: the model got the tool's real output.
  const toolMessage = g.provider.requests[1]?.body.messages.at(-1)
  assert.equal(toolMessage?.role, 'tool')
  assert.ok(String(toolMessage?.content).includes(API_KEY))

  assert.ok(logs.lines().some((l) => l.msg === 'leaky called'), 'the tool\'s log line was written')
  assertClean('logs', logs.text())
  assert.ok(observed.some((e) => e.kind === 'tool_call'), 'observers saw the call')
  assertClean('observer events', JSON.stringify(observed))
  assertClean('WebSocket events', JSON.stringify(events))
  assertClean('turn record', JSON.stringify(turn.body))

  const call = events.find((e) => e.event.kind === 'tool_call')?.event
  assert.equal(call?.kind === 'tool_call' && call.arguments.password, '[REDACTED]')
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.match(result?.kind === 'tool_result' ? result.output : '', /api_key=sk-l\*\[REDACTED\]/)
})

test('secrets in tool output never reach an SSE stream', async (t) => {
  const g = await startGateway({
    tools: [leakyTool()],
    overrides: { agents: { default: { tools: ['leaky'] } }, risk_profiles: { default: { auto_approve: ['leaky'] } } }
  })
  t.after(() => g.close())
  g.provider.enqueue({ toolCalls: [leakyCall] }, { text: 'all done' })
  const res = await fetch(`${g.url}/v1/turns`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ message: 'deploy it' })
  })
  const stream = await res.text()
  assert.match(stream, /event: tool_result/)
  assert.match(stream, /event: turn\.completed/)
  assertClean('SSE stream', stream)
})

test('approval requests show scrubbed arguments and a scrubbed summary', async (t) => {
  const probes = createProbes()
  const g = await startGateway({ tools: probes.tools, overrides: probeOverrides() })
  t.after(() => g.close())
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'risky', arguments: { label: `Authorization: Bearer ${BEARER}`, output: `api_key=${API_KEY}` } }] }, { text: 'ok' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const requested = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested')
  assert.equal(requested.event.kind, 'approval.requested')
  if (requested.event.kind !== 'approval.requested') return
  assertClean('approval.requested', JSON.stringify(requested.event))
  assert.match(requested.event.summary, /Bearer abcd\*\[REDACTED\]/)
  await ws.request({ type: 'approval.respond', request_id: requested.event.request_id, decision: 'no' })
  await ws.waitForTerminal(accepted.turn_id)
  const turn = await g.http('GET', `/v1/turns/${accepted.turn_id as string}`)
  assertClean('approval audit record', JSON.stringify(turn.body.approvals))
})

test('a query-string token never appears in the request log', async (t) => {
  const logs = captureLogs('info')
  const g = await startGateway({ overrides: jwtAuth({ allow_query_token: true }), logger: logs.logger })
  t.after(() => g.close())
  const token = await mintToken()
  const ws = await g.socket({ query: `?access_token=${token}` })
  assert.equal((await ws.request({ type: 'ping' })).type, 'pong')
  const incoming = logs.lines().find((l) => l.msg === 'incoming request' && String(l.req?.url).startsWith('/v1/ws'))
  assert.ok(incoming !== undefined, 'the upgrade request was logged')
  assert.match(String(incoming.req.url), /access_token=eyJh\*\[REDACTED\]/)
  for (const part of token.split('.')) assert.ok(!logs.text().includes(part), 'a token segment was logged')
})

test('session history shown to clients has tool data scrubbed while the model saw the real values', async (t) => {
  const probes = createProbes()
  const g = await startGateway({ tools: probes.tools, overrides: probeOverrides() })
  t.after(() => g.close())
  const secret = 'sk-live-0123456789abcdefghijklmnop'
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'probe', arguments: { label: `api_key=${secret}`, output: `token=${secret}` } }] }, { text: 'ok' })
  await g.http('POST', '/v1/turns?wait=true', { message: 'go', session_id: 'scrub-history' })
  assert.ok(JSON.stringify(g.provider.requests[1]?.body.messages).includes(secret), 'the model needs the real data')
  const session = await g.http('GET', '/v1/sessions/scrub-history')
  const shown = JSON.stringify(session.body.history)
  assert.equal(shown.includes(secret), false)
  assert.match(shown, /\[REDACTED\]/)
})

test('a bare AWS secret key beside its key id in tool arguments never reaches events, replay, the turn record or logs', async (t) => {
  const logs = captureLogs('trace')
  const g = await startGateway({
    tools: [leakyTool()],
    overrides: { log: { level: 'trace' }, agents: { default: { tools: ['leaky'] } }, risk_profiles: { default: { auto_approve: ['leaky'] } } },
    logger: logs.logger
  })
  t.after(() => g.close())
  const secret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'leaky', arguments: { command: `deploy --key-id AKIAIOSFODNN7EXAMPLE --key ${secret}` } }] }, { text: 'done' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'deploy it' })
  const live = await ws.waitForTerminal(accepted.turn_id)
  const turnId = accepted.turn_id as string
  const surfaces: Array<[string, string]> = [
    ['WebSocket events', JSON.stringify(live)],
    ['replay', JSON.stringify(await turnEvents(g, turnId))],
    ['turn record', JSON.stringify((await g.http('GET', `/v1/turns/${turnId}`)).body)],
    ['logs', logs.text()]
  ]
  for (const [where, text] of surfaces) assert.ok(!text.includes(secret.slice(4, 16)), `${where} has the secret key`)
  const call = live.find((e) => e.event.kind === 'tool_call')?.event
  assert.equal(call?.kind === 'tool_call' && call.arguments.command, 'deploy --key-id AKIA*[REDACTED] --key wJal*[REDACTED]')
})

test('a secret the model writes is masked in its streamed text, final text, the turn record and the shown history, and kept in the model\'s history', async (t) => {
  const g = await startGateway({})
  t.after(() => g.close())
  // The fake provider streams text eight characters at a time: the key arrives cut into pieces.
  g.provider.enqueue({ text: `Use ${GITHUB} for the push.` }, { text: 'ok' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'which token?', session_id: 'model-text' })
  const live = await ws.waitForTerminal(accepted.turn_id)
  const turnId = accepted.turn_id as string
  const streamed = live.flatMap((e) => e.event.kind === 'text.delta' ? [e.event.text] : []).join('')
  assert.equal(streamed, 'Use ghp_*[REDACTED] for the push.')
  const completed = live.at(-1)?.event
  assert.equal(completed?.kind === 'turn.completed' && completed.final_text, 'Use ghp_*[REDACTED] for the push.')
  assertClean('replay', JSON.stringify(await turnEvents(g, turnId)))
  assertClean('turn record', JSON.stringify((await g.http('GET', `/v1/turns/${turnId}`)).body))
  assertClean('session history', JSON.stringify((await g.http('GET', '/v1/sessions/model-text')).body))

  await g.http('POST', '/v1/turns?wait=true', { message: 'thanks', session_id: 'model-text' })
  assert.ok(JSON.stringify(g.provider.requests[1]?.body.messages).includes(GITHUB), 'the model\'s history keeps its own words')
})

test('a secret in the user\'s message is masked in the session history shown to clients and reaches the model as written', async (t) => {
  const g = await startGateway({})
  t.after(() => g.close())
  g.provider.enqueue({ text: 'noted' })
  await g.http('POST', '/v1/turns?wait=true', { message: `my key is ${API_KEY}`, session_id: 'user-text' })
  assert.ok(JSON.stringify(g.provider.requests[0]?.body.messages).includes(API_KEY))
  const history = (await g.http('GET', '/v1/sessions/user-text')).body.history as Array<{ role: string, content: string }>
  assert.deepEqual(history.map((m) => [m.role, m.content]), [['user', 'my key is sk-l*[REDACTED]'], ['assistant', 'noted']])
})
