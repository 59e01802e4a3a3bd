import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { captureLogs, type LogCapture } from '../helpers/log-capture.js'
import { createProbes, probeOverrides } from '../helpers/tools.js'
import { defineTool, ok } from '../../src/tools/contract.js'

async function setup (
  t: { after: (fn: () => Promise<void>) => void }, extra: Record<string, unknown> = {}
): Promise<{ g: TestGateway, logs: LogCapture }> {
  const logs = captureLogs('info')
  const g = await startGateway({ logger: logs.logger, tools: createProbes().tools, overrides: probeOverrides(extra) })
  t.after(async () => { await g.close() })
  return { g, logs }
}

const probe = (id: string, args: Record<string, unknown>): { id: string, name: string, arguments: Record<string, unknown> } => ({ id, name: 'probe', arguments: args })

function toolLines (logs: LogCapture): Array<Record<string, any>> {
  return logs.lines().filter((l) => l.event === 'tool_call_start' || l.event === 'tool_call')
}

test('each tool call writes one structured info line when it starts and one when it ends', async (t) => {
  const { g, logs } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('prov-1', { label: 'a' })] }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go', session_id: 's-log' })
  const [start, end, ...rest] = toolLines(logs)
  assert.equal(rest.length, 0)
  const correlation = { turn_id: res.body.turn_id, session_id: 's-log', agent: 'default', channel: 'http' }
  const callId = res.body.tool_calls[0].call_id
  assert.deepEqual(
    {
      level: start?.level, msg: start?.msg, event: start?.event, tool: start?.tool, call_id: start?.call_id,
      provider_call_id: start?.provider_call_id, arguments: start?.arguments
    },
    { level: 30, msg: 'tool call started', event: 'tool_call_start', tool: 'probe', call_id: callId, provider_call_id: 'prov-1', arguments: { label: 'a' } }
  )
  for (const [k, v] of Object.entries(correlation)) assert.equal(start?.[k], v, k)
  assert.deepEqual(
    [end?.level, end?.msg, end?.tool, end?.call_id, end?.status, end?.success, end?.result, typeof end?.duration_ms],
    [30, 'tool call finished', 'probe', callId, 'ok', true, 'done a', 'number']
  )
  for (const [k, v] of Object.entries(correlation)) assert.equal(end?.[k], v, k)
})

test('credentials in tool arguments and results never reach a log line', async (t) => {
  const { g, logs } = await setup(t)
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'Bearer abcdefghijklmnopqrstuv', output: 'key sk-ABCDEFGHIJKLMNOPQRSTUVWX found' })] }, { text: 'done' })
  await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  const lines = toolLines(logs)
  const text = JSON.stringify(lines)
  assert.doesNotMatch(text, /abcdefghijklmnopqrstuv|ABCDEFGHIJKLMNOPQRSTUVWX/)
  assert.equal(lines[0]?.arguments.label, 'Bearer abcd*[REDACTED]')
  assert.equal(lines[1]?.result, 'key sk-A*[REDACTED] found')
})

test('large arguments and results are bounded by log.max_field_chars', async (t) => {
  const { g, logs } = await setup(t, { log: { max_field_chars: 100 } })
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'x'.repeat(5000), output: 'y'.repeat(5000) })] }, { text: 'done' })
  await g.http('POST', '/v1/turns?wait=true', { message: 'go' })
  const [start, end] = toolLines(logs)
  assert.equal(typeof start?.arguments, 'string', 'too large to stay structured')
  assert.ok((start?.arguments as string).startsWith('{"label":"xxx'))
  assert.match(start?.arguments as string, /…\[\d+ more chars\]$/)
  assert.ok((start?.arguments as string).length < 200)
  assert.equal(end?.result, `${'y'.repeat(100)}…[4900 more chars]`)
})

test('log.tool_calls = false silences tool lines but keeps approval audit lines', async (t) => {
  const { g, logs } = await setup(t, { log: { tool_calls: false } })
  g.provider.enqueue({ toolCalls: [probe('c1', { label: 'a' }), { id: 'c2', name: 'risky', arguments: { label: 'b' } }] }, { text: 'done' })
  await g.http('POST', '/v1/turns?wait=true', { message: 'go', interactive: false })
  assert.equal(toolLines(logs).length, 0)
  assert.equal(logs.lines().filter((l) => l.audit === 'approval_decision').length, 1)
})

test('a turn makes its child loggers only when something logs through them', async (t) => {
  const logs = captureLogs('info')
  // Fastify's per-request children are made here too; the turn's and its calls' carry turn_id or call_id.
  const children = t.mock.method(logs.logger, 'child')
  const chatty = defineTool({
    name: 'chatty',
    description: 'logs a line through its context',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    async execute (_args, ctx) {
      ctx.log.info({ note: 'hello' }, 'chatty ran')
      return ok('said it')
    }
  })
  const g = await startGateway({
    logger: logs.logger,
    tools: [...createProbes().tools, chatty],
    overrides: probeOverrides({ agents: { default: { tools: ['probe', 'chatty'] } }, risk_profiles: { default: { auto_approve: ['probe', 'chatty'] } } })
  })
  t.after(async () => { await g.close() })
  g.provider.enqueue({ toolCalls: [probe('p1', { label: 'a' })] }, { text: 'done' })
  const quiet = await g.http('POST', '/v1/turns?wait=true', { message: 'go', session_id: 's-quiet' })
  assert.equal(quiet.body.status, 'completed')
  const turnChildren = (): unknown[] => children.mock.calls.map((c) => c.arguments[0])
    .filter((b) => typeof b === 'object' && b !== null && ('turn_id' in b || 'call_id' in b))
  assert.deepEqual(turnChildren(), [], 'a turn whose calls log nothing makes no child logger')

  g.provider.enqueue({ toolCalls: [probe('p2', { label: 'b' }), { id: 'c1', name: 'chatty', arguments: {} }] }, { text: 'done' })
  const res = await g.http('POST', '/v1/turns?wait=true', { message: 'go', session_id: 's-chatty' })
  assert.equal(res.body.status, 'completed')
  const callId = res.body.tool_calls[1].call_id
  assert.deepEqual(turnChildren(), [
    { turn_id: res.body.turn_id, session_id: 's-chatty', agent: 'default' },
    { tool: 'chatty', call_id: callId }
  ])
  const line = logs.lines().find((l) => l.msg === 'chatty ran')
  assert.deepEqual([line?.turn_id, line?.tool, line?.call_id, line?.note], [res.body.turn_id, 'chatty', callId, 'hello'])
})
