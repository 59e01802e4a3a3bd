import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { deepMerge } from '../../src/core/config.js'
import { startGateway, shape, type TestGateway } from '../helpers/gateway.js'
import { advertised, httpServerConfig, runTurn, systemPrompt, toolResults } from '../helpers/mcp.js'
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/mcp/http-server.js'

type After = { after: (fn: () => Promise<void>) => void }

async function delegatingGateway (t: After, overrides: unknown = {}): Promise<TestGateway> {
  const g = await startGateway({
    overrides: deepMerge({
      agents: { default: { tools: ['file_read', 'file_write', 'delegate'] } },
      risk_profiles: { default: { level: 'full' } }
    }, overrides)
  })
  t.after(async () => { await g.close() })
  return g
}

async function deferredDelegatingGateway (t: After): Promise<{ g: TestGateway, server: HttpMcpServer }> {
  const server = await startHttpMcpServer()
  t.after(async () => { await server.close() })
  const g = await delegatingGateway(t, {
    mcp: { deferred_loading: true, servers: { web: httpServerConfig(server.url) } },
    agents: { default: { mcp_bundles: ['web'] } }
  })
  return { g, server }
}

test('delegate runs a sub-turn that sees only the tools it was granted and reports back its answer and calls', async (t) => {
  const g = await delegatingGateway(t)
  await writeFile(join(g.workspace, 'a.txt'), 'a says hi')
  g.provider.enqueue(
    { toolCalls: [{ id: 'p1', name: 'delegate', arguments: { task: 'Read a.txt and tell me what it says.', tools: ['file_read'] } }] },
    { toolCalls: [{ id: 's1', name: 'file_read', arguments: { path: 'a.txt' } }] },
    { text: 'It says: a says hi' },
    { text: 'The sub-agent read it.' }
  )
  const { events } = await runTurn(g, { message: 'delegate the reading' })
  assert.deepEqual(advertised(g, 1), ['file_read'])
  assert.deepEqual(g.provider.requests[1]?.body.messages.slice(1), [{ role: 'user', content: 'Read a.txt and tell me what it says.' }])
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:delegate', 'tool_result:delegate:ok', 'iteration', 'turn.completed'])
  assert.equal(toolResults(events)[0]?.output, 'It says: a says hi\n\n[delegated to default: completed, 2 iteration(s); tool calls: file_read ok]')
  const turn = await g.http('GET', `/v1/turns/${events[0]?.turn_id ?? ''}`)
  assert.deepEqual(turn.body.tool_calls.map((c: { name: string }) => c.name), ['delegate'])
})

test('a delegated turn threads the activated tools it was granted and advertises only tools its executor resolves', async (t) => {
  const { g, server } = await deferredDelegatingGateway(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'p1', name: 'tool_search', arguments: { query: 'select:web__echo' } }] },
    { toolCalls: [{ id: 'p2', name: 'delegate', arguments: { task: 'echo, then fetch add and use it', tools: ['web__echo', 'tool_search'] } }] },
    // The sub-turn: every tool it is offered must run.
    { toolCalls: [{ id: 's1', name: 'web__echo', arguments: { text: 'from the sub-turn' } }, { id: 's2', name: 'tool_search', arguments: { query: 'select:web__add' } }] },
    { toolCalls: [{ id: 's3', name: 'web__add', arguments: { a: 1, b: 2 } }] },
    { text: 'echoed and added' },
    { text: 'parent done' }
  )
  const { events } = await runTurn(g, { message: 'go' })
  assert.deepEqual(advertised(g, 1), ['file_read', 'file_write', 'delegate', 'tool_search', 'web__echo'])
  assert.deepEqual(advertised(g, 2), ['tool_search', 'web__echo'])
  assert.deepEqual(advertised(g, 3), ['tool_search', 'web__echo', 'web__add'])
  assert.equal(toolResults(events)[1]?.output, 'echoed and added\n\n[delegated to default: completed, 3 iteration(s); tool calls: web__echo ok, tool_search ok, web__add ok]')
  assert.deepEqual(server.events, ['call echo', 'call add'])
  // What the sub-turn fetched stays in the sub-turn.
  assert.deepEqual(advertised(g, 5), ['file_read', 'file_write', 'delegate', 'tool_search', 'web__echo'])
})

test('delegate refuses tools outside the parent turn\'s effective set, including deferred tools not yet fetched', async (t) => {
  const { g } = await deferredDelegatingGateway(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'p1', name: 'delegate', arguments: { task: 'add', tools: ['web__add', 'shell'] } }] },
    { text: 'refused' }
  )
  const { events } = await runTurn(g, { message: 'go' })
  const result = toolResults(events)[0]
  assert.equal(result?.status, 'error')
  assert.equal(result?.output, 'Error: delegate: not available to this turn: web__add, shell')
  assert.equal(g.provider.requests.length, 2)
})

test('delegate is not offered to a sub-turn at the maximum delegation depth', async (t) => {
  const g = await delegatingGateway(t, { delegate: { max_depth: 1 } })
  g.provider.enqueue(
    { toolCalls: [{ id: 'p1', name: 'delegate', arguments: { task: 'do it' } }] },
    { toolCalls: [{ id: 's1', name: 'delegate', arguments: { task: 'deeper' } }] },
    { text: 'could not go deeper' },
    { text: 'done' }
  )
  const { events } = await runTurn(g, { message: 'go' })
  assert.deepEqual(advertised(g, 0), ['file_read', 'file_write', 'delegate'])
  assert.deepEqual(advertised(g, 1), ['file_read', 'file_write'])
  assert.match(toolResults(events)[0]?.output ?? '', /tool calls: delegate error\]$/)
  assert.equal(g.provider.requests.length, 4)
})

test('delegate may hand a task to another agent listed in delegate_agents, which brings its prompt and narrows to its bundle', async (t) => {
  const g = await delegatingGateway(t, {
    agents: {
      default: { delegate_agents: ['reader'] },
      reader: { provider: 'fake', system_prompt: 'You are the reader.', tools: ['file_read', 'shell'] }
    }
  })
  g.provider.enqueue(
    { toolCalls: [{ id: 'p1', name: 'delegate', arguments: { agent: 'reader', task: 'read' } }] },
    { text: 'read it' },
    { text: 'done' }
  )
  const { events } = await runTurn(g, { message: 'go' })
  assert.equal(systemPrompt(g, 1), 'You are the reader.')
  assert.deepEqual(advertised(g, 1), ['file_read'])
  assert.match(toolResults(events)[0]?.output ?? '', /\[delegated to reader: completed/)
})

test('delegate refuses an agent that is not listed in delegate_agents', async (t) => {
  const g = await delegatingGateway(t, { agents: { other: { provider: 'fake' } } })
  g.provider.enqueue({ toolCalls: [{ id: 'p1', name: 'delegate', arguments: { agent: 'other', task: 'x' } }] }, { text: 'no' })
  const { events } = await runTurn(g, { message: 'go' })
  assert.equal(toolResults(events)[0]?.output, 'Error: delegate: agent "other" is not one this agent may delegate to')
})

test('an approval inside a delegated turn is asked on the parent turn\'s backchannel and audited on the parent turn', async (t) => {
  const g = await delegatingGateway(t, { risk_profiles: { default: { level: 'supervised', auto_approve: ['delegate'] } } })
  g.provider.enqueue(
    { toolCalls: [{ id: 'p1', name: 'delegate', arguments: { task: 'write b.txt', tools: ['file_write'] } }] },
    { toolCalls: [{ id: 's1', name: 'file_write', arguments: { path: 'b.txt', content: 'written by the sub-turn' } }] },
    { text: 'wrote it' },
    { text: 'done' }
  )
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'go' })
  const asked = await ws.waitForEvent(accepted.turn_id, (e) => e.kind === 'approval.requested', 20_000)
  assert.equal(asked.event.kind === 'approval.requested' && asked.event.name, 'file_write')
  ws.send({ type: 'approval.respond', request_id: asked.event.kind === 'approval.requested' ? asked.event.request_id : '', decision: 'yes' })
  const events = await ws.waitForTerminal(accepted.turn_id, 20_000)
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'tool_call:delegate', 'approval.requested:file_write', 'approval.resolved:yes', 'tool_result:delegate:ok', 'iteration', 'turn.completed'])
  assert.equal(await readFile(join(g.workspace, 'b.txt'), 'utf8'), 'written by the sub-turn')
  const turn = await g.http('GET', `/v1/turns/${accepted.turn_id as string}`)
  assert.deepEqual(turn.body.approvals.map((a: { tool: string, decision: string }) => [a.tool, a.decision]), [['file_write', 'yes']])
})
