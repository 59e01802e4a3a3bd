import { test } from 'node:test'
import assert from 'node:assert/strict'
import { access, readFile, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { readOnlyDeniedText } from '../../src/approval/read-only.js'
import { deepMerge } from '../../src/core/config.js'
import { startGateway, shape, type TestGateway } from '../helpers/gateway.js'
import { httpServerConfig, runTurn, toolResults } from '../helpers/mcp.js'
import { startHttpMcpServer } from '../fixtures/mcp/http-server.js'

type After = { after: (fn: () => Promise<void>) => void }

async function readOnlyGateway (t: After, overrides: unknown = {}): Promise<TestGateway> {
  const g = await startGateway({
    overrides: deepMerge({
      agents: { default: { tools: ['shell', 'file_read', 'file_write', 'http_request', 'delegate'] } },
      risk_profiles: { default: { level: 'readonly' } }
    }, overrides)
  })
  t.after(async () => { await g.close() })
  return g
}

async function exists (path: string): Promise<boolean> {
  return await access(path).then(() => true, () => false)
}

test('under a read-only profile file_write is refused as denied, the file is not written and nobody is asked', async (t) => {
  const g = await readOnlyGateway(t)
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'file_write', arguments: { path: 'out.txt', content: 'x' } }] }, { text: 'ok' })
  const { events, turnId } = await runTurn(g, { message: 'write it' })
  assert.deepEqual(shape(events),
    ['turn.started', 'iteration', 'tool_call:file_write', 'tool_result:file_write:denied', 'iteration', 'turn.completed'])
  assert.equal(toolResults(events)[0]?.output, readOnlyDeniedText('file_write'))
  assert.equal(toolResults(events)[0]?.success, false)
  assert.equal(await exists(join(g.workspace, 'out.txt')), false)
  const turn = await g.http('GET', `/v1/turns/${turnId}`)
  assert.equal(turn.body.tool_calls[0].status, 'denied')
  assert.deepEqual(turn.body.approvals, [])
  const toolMessage = g.provider.requests[1]?.body.messages.at(-1)
  assert.equal(toolMessage?.content, readOnlyDeniedText('file_write'), 'the model is told why')
})

test('under a read-only profile a read-only shell pipeline runs and a touch is refused', async (t) => {
  const g = await readOnlyGateway(t)
  await writeFile(join(g.workspace, 'notes.txt'), 'one\ntwo\n')
  g.provider.enqueue({
    toolCalls: [
      { id: 'c1', name: 'shell', arguments: { command: 'cat notes.txt | wc -l' } },
      { id: 'c2', name: 'shell', arguments: { command: 'touch PWN && echo done' } }
    ]
  }, { text: 'ok' })
  const { events } = await runTurn(g, { message: 'look around' })
  const [read, write] = toolResults(events)
  assert.equal(read?.status, 'ok')
  assert.equal(read?.output.trim(), '2')
  assert.equal(write?.status, 'denied')
  assert.equal(write?.output, readOnlyDeniedText('shell'))
  assert.equal(await exists(join(g.workspace, 'PWN')), false)
})

test('under a read-only profile an HTTP GET reaches the server and a POST never does', async (t) => {
  const seen: string[] = []
  const server = createServer((req, res) => { seen.push(req.method ?? '?'); res.end('hello') })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => { await new Promise((resolve) => server.close(resolve)) })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`
  const g = await readOnlyGateway(t, { tools: { http: { allow_hosts: ['127.0.0.1'] } } })
  g.provider.enqueue({
    toolCalls: [
      { id: 'c1', name: 'http_request', arguments: { url } },
      { id: 'c2', name: 'http_request', arguments: { url, method: 'POST', body: '{"drop":"tables"}' } }
    ]
  }, { text: 'ok' })
  const { events } = await runTurn(g, { message: 'fetch and post' })
  assert.deepEqual(toolResults(events).map((r) => r.status), ['ok', 'denied'])
  assert.deepEqual(seen, ['GET'])
})

test('under a read-only profile an MCP tool runs only when the server marks it read-only', async (t) => {
  const server = await startHttpMcpServer()
  t.after(async () => { await server.close() })
  const g = await readOnlyGateway(t, {
    mcp: { servers: { web: httpServerConfig(server.url) } },
    agents: { default: { mcp_bundles: ['web'] } }
  })
  g.provider.enqueue({
    toolCalls: [
      { id: 'c1', name: 'web__echo', arguments: { text: 'hi' } },
      { id: 'c2', name: 'web__add', arguments: { a: 1, b: 2 } }
    ]
  }, { text: 'ok' })
  const { events } = await runTurn(g, { message: 'use the server' })
  assert.deepEqual(toolResults(events).map((r) => `${r.name}:${r.status}`), ['web__echo:ok', 'web__add:denied'])
  assert.deepEqual(server.events, ['call echo'])
})

test('a read-only agent that delegates cannot write through the sub-turn', async (t) => {
  const g = await readOnlyGateway(t)
  g.provider.enqueue(
    { toolCalls: [{ id: 'p1', name: 'delegate', arguments: { task: 'Write hi to out.txt.' } }] },
    { toolCalls: [{ id: 's1', name: 'file_write', arguments: { path: 'out.txt', content: 'hi' } }] },
    { text: 'I could not write it.' },
    { text: 'The sub-agent could not write.' }
  )
  const { events } = await runTurn(g, { message: 'delegate the writing' })
  assert.equal(toolResults(events)[0]?.output,
    'I could not write it.\n\n[delegated to default: completed, 2 iteration(s); tool calls: file_write denied]')
  assert.equal(await exists(join(g.workspace, 'out.txt')), false)
  const subTurnResult = g.provider.requests[2]?.body.messages.at(-1)
  assert.equal(subTurnResult?.content, readOnlyDeniedText('file_write'))
})

test('a supervised profile still asks about file_write and writes after yes', async (t) => {
  const g = await startGateway({ overrides: { agents: { default: { tools: ['file_write'] } } } })
  t.after(async () => { await g.close() })
  g.provider.enqueue({ toolCalls: [{ id: 'c1', name: 'file_write', arguments: { path: 'out.txt', content: 'x' } }] }, { text: 'ok' })
  const ws = await g.socket()
  const accepted = await ws.request({ type: 'turn.start', message: 'write it' })
  await ws.answerApproval(accepted.turn_id, 'yes')
  await ws.waitForTerminal(accepted.turn_id)
  assert.equal(await readFile(join(g.workspace, 'out.txt'), 'utf8'), 'x')
})
