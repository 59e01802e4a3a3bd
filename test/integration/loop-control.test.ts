import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startGateway, shape, assertSeqContiguous, type TestGateway } from '../helpers/gateway.js'
import type { RecordedRequest, ScriptedReply } from '../helpers/fake-provider.js'
import type { EventEnvelope } from '../../schemas/events.js'
import { MAX_ITERATIONS_PROMPT } from '../../src/turn/loop.js'
import { runTurn } from '../helpers/turns.js'

async function gateway (t: { after: (fn: () => Promise<void>) => void }, overrides?: unknown): Promise<TestGateway> {
  const g = await startGateway(overrides === undefined ? {} : { overrides })
  t.after(() => g.close())
  await writeFile(join(g.workspace, 'hello.txt'), 'hi there')
  return g
}

function runtime (profile: Record<string, unknown>): unknown {
  return { runtime_profiles: { default: profile } }
}

function systemOf (request: RecordedRequest | undefined): string {
  return request?.body.messages[0]?.content ?? ''
}

/** Reads `files[n]` on the n-th offer of tools; answers in prose once no tools are offered. */
function alwaysReads (files: readonly string[]): Array<(r: RecordedRequest) => ScriptedReply> {
  return files.map((path, i) => (request: RecordedRequest): ScriptedReply =>
    request.body.tools === undefined
      ? { text: 'I read the files so far.' }
      : { toolCalls: [{ id: `c${i}`, name: 'file_read', arguments: { path } }] })
}

/** The terminal event, which must be turn.failed. */
function failure (events: readonly EventEnvelope[]): { kind: 'turn.failed', code: string, message: string } {
  const last = events.at(-1)?.event
  if (last?.kind !== 'turn.failed') throw new assert.AssertionError({ message: `expected turn.failed, got ${JSON.stringify(last)}` })
  // Token usage on terminal events has its own tests (token-usage.test.ts).
  const { usage: _usage, ...failed } = last
  return failed
}

const ROUND = ['iteration', 'tool_call:file_read', 'tool_result:file_read:ok']

test('at the iteration cap the model is asked for a tool-free summary and the turn completes with a stop note', async (t) => {
  const g = await gateway(t, runtime({ max_tool_iterations: 2 }))
  await writeFile(join(g.workspace, 'other.txt'), 'other')
  g.provider.enqueue(...alwaysReads(['hello.txt', 'other.txt', 'hello.txt']))
  const { turn, events } = await runTurn(g, { message: 'keep reading' })
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', ...ROUND, ...ROUND, 'turn.completed'])
  assert.equal(g.provider.requests.length, 3)
  const summary = g.provider.requests[2]?.body
  assert.equal(summary?.tools, undefined)
  assert.deepEqual(summary?.messages.at(-1), { role: 'user', content: MAX_ITERATIONS_PROMPT })
  assert.ok(MAX_ITERATIONS_PROMPT.startsWith('You have reached the maximum number of tool iterations'))
  assert.equal(turn.status, 'completed')
  assert.ok(turn.final_text.endsWith('*Turn stopped: reached maximum tool iterations (2).*'), turn.final_text)
  assert.ok(turn.final_text.startsWith('I read the files so far.'))
  assert.equal(turn.iterations, 2)
})

test('max_iteration_behavior "error" fails the turn with MAX_ITERATIONS at the cap', async (t) => {
  const g = await gateway(t, runtime({ max_tool_iterations: 2, max_iteration_behavior: 'error' }))
  await writeFile(join(g.workspace, 'other.txt'), 'other')
  g.provider.enqueue(...alwaysReads(['hello.txt', 'other.txt', 'hello.txt']))
  const { turn, events } = await runTurn(g, { message: 'keep reading' })
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', ...ROUND, ...ROUND, 'turn.failed'])
  assert.deepEqual(failure(events), { kind: 'turn.failed', code: 'MAX_ITERATIONS', message: 'Agent exceeded maximum tool iterations (2)' })
  assert.deepEqual(turn.error, { code: 'MAX_ITERATIONS', message: 'Agent exceeded maximum tool iterations (2)' })
  assert.equal(g.provider.requests.length, 2)
})

test('the same successful call repeated across rounds warns, then blocks, then fails the turn with LOOP_DETECTED', async (t) => {
  const g = await gateway(t, runtime({ dedup_scope: 'round', loop_detection: { max_repeats: 3 } }))
  g.provider.enqueue(...alwaysReads(Array.from({ length: 8 }, () => 'hello.txt')))
  const { turn, events } = await runTurn(g, { message: 'read it again and again' })
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', ...ROUND, ...ROUND, ...ROUND, ...ROUND, ...ROUND, 'turn.failed'])
  const failed = failure(events)
  assert.equal(failed.code, 'LOOP_DETECTED')
  assert.equal(failed.message, "Agent loop aborted by loop detector: Tool 'file_read' called 5 times in a row with identical arguments")
  assert.equal(turn.status, 'failed')
  assert.equal(g.provider.requests.length, 5)
  assert.ok(!systemOf(g.provider.requests[2]).includes('[Loop Detection'))
  assert.ok(systemOf(g.provider.requests[3]).includes("[Loop Detection] Tool 'file_read' called 3 times in a row with identical arguments. Try a different approach."))
  assert.ok(systemOf(g.provider.requests[4]).includes("[Loop Detection — BLOCKED] Tool 'file_read' called 4 times in a row"))
})

test('failed calls repeated identically never trip the loop detector', async (t) => {
  const g = await gateway(t, runtime({ dedup_scope: 'round', loop_detection: { max_repeats: 2, identical_output_min_elapsed_ms: 0 } }))
  g.provider.enqueue(...alwaysReads(Array.from({ length: 6 }, () => 'missing.txt')), { text: 'The file does not exist.' })
  const { turn, events } = await runTurn(g, { message: 'read missing.txt' })
  assertSeqContiguous(events)
  const failedRound = ['iteration', 'tool_call:file_read', 'tool_result:file_read:error']
  assert.deepEqual(shape(events), ['turn.started', ...Array.from({ length: 6 }, () => failedRound).flat(), 'iteration', 'turn.completed'])
  assert.equal(turn.final_text, 'The file does not exist.')
  for (const request of g.provider.requests) assert.ok(!systemOf(request).includes('[Loop Detection'))
})

test('identical output over consecutive rounds fails the turn with IDENTICAL_OUTPUT_LOOP when enabled', async (t) => {
  const g = await gateway(t, runtime({ loop_detection: { identical_output_min_elapsed_ms: 0 } }))
  const files = ['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt']
  for (const name of files) await writeFile(join(g.workspace, name), 'same content')
  g.provider.enqueue(...alwaysReads(files))
  const { events } = await runTurn(g, { message: 'read them all' })
  assertSeqContiguous(events)
  assert.deepEqual(shape(events), ['turn.started', ...ROUND, ...ROUND, ...ROUND, ...ROUND, 'turn.failed'])
  assert.deepEqual(failure(events), {
    kind: 'turn.failed', code: 'IDENTICAL_OUTPUT_LOOP', message: 'Agent loop aborted: identical tool output detected 3 consecutive times'
  })
  assert.equal(g.provider.requests.length, 4)
})

test('identical output does not abort the turn while the check is disabled (the default)', async (t) => {
  const g = await gateway(t)
  const files = ['a.txt', 'b.txt', 'c.txt', 'd.txt']
  for (const name of files) await writeFile(join(g.workspace, name), 'same content')
  g.provider.enqueue(...alwaysReads(files), { text: 'All the same.' })
  const { turn, events } = await runTurn(g, { message: 'read them all' })
  assert.deepEqual(shape(events), ['turn.started', ...ROUND, ...ROUND, ...ROUND, ...ROUND, 'iteration', 'turn.completed'])
  assert.equal(turn.final_text, 'All the same.')
})

test('a provider answering HTTP 500 fails the turn with PROVIDER_ERROR', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ status: 500, errorBody: JSON.stringify({ error: { message: 'upstream exploded' } }) })
  const { turn, events } = await runTurn(g, { message: 'hi' })
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'turn.failed'])
  const failed = failure(events)
  assert.equal(failed.code, 'PROVIDER_ERROR')
  assert.match(failed.message, /HTTP 500/)
  assert.equal(turn.error.code, 'PROVIDER_ERROR')
})

test('a provider that never answers fails the turn with PROVIDER_TIMEOUT after providers.<name>.timeout_ms', async (t) => {
  const g = await gateway(t, { providers: { fake: { timeout_ms: 300 } } })
  g.provider.enqueue({ hang: true })
  const { events } = await runTurn(g, { message: 'hi' })
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'turn.failed'])
  const failed = failure(events)
  assert.equal(failed.code, 'PROVIDER_TIMEOUT')
  assert.match(failed.message, /300 ms/)
})

test('a completion with neither text nor tool calls fails the turn with EMPTY_COMPLETION', async (t) => {
  const g = await gateway(t)
  g.provider.enqueue({ text: '' })
  const { events } = await runTurn(g, { message: 'hi' })
  assert.deepEqual(shape(events), ['turn.started', 'iteration', 'turn.failed'])
  assert.equal(failure(events).code, 'EMPTY_COMPLETION')
})

test('max_tool_result_bytes bounds the model-visible result with a truncation marker and the event says truncated', async (t) => {
  const g = await gateway(t, runtime({ max_tool_result_bytes: 100 }))
  await writeFile(join(g.workspace, 'big.txt'), `${'A'.repeat(500)}${'B'.repeat(500)}`)
  g.provider.enqueue({ toolCalls: [{ id: 'b1', name: 'file_read', arguments: { path: 'big.txt' } }] }, { text: 'Big file.' })
  const { turn, events } = await runTurn(g, { message: 'read big.txt' })
  const visible = g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')?.content ?? ''
  assert.ok(visible.includes('[... ') && visible.includes('characters truncated ...]'), visible)
  assert.equal(visible, `${'A'.repeat(66)}\n\n[... 900 characters truncated ...]\n\n${'B'.repeat(34)}`)
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.ok(result?.kind === 'tool_result')
  // The client sees the same head and tail; its marker names the unit it counts and the whole size.
  const shown = `${'A'.repeat(66)}\n\n[... 900 of 1000 bytes truncated ...]\n\n${'B'.repeat(34)}`
  assert.deepEqual([result.truncated, result.original_bytes, result.output], [true, 1000, shown])
  const recorded = turn.tool_calls[0]
  assert.deepEqual([recorded?.truncated, recorded?.original_bytes, recorded?.output], [true, 1000, shown])
})

test('a result over both bounds reaches the client cut once, from the whole output, under one marker of bytes dropped', async (t) => {
  const g = await gateway(t, { turns: { max_event_output_bytes: 16_384 } })
  // Larger than max_tool_result_bytes (default 50,000) and the event bound: the 200 kB case.
  const body = `${'H'.repeat(100_000)}${'T'.repeat(100_000)}`
  await writeFile(join(g.workspace, 'huge.txt'), body)
  g.provider.enqueue({ toolCalls: [{ id: 'h1', name: 'file_read', arguments: { path: 'huge.txt' } }] }, { text: 'Huge file.' })
  const { turn, events } = await runTurn(g, { message: 'read huge.txt' })
  const visible = g.provider.requests[1]?.body.messages.find((m) => m.role === 'tool')?.content ?? ''
  assert.equal(visible, `${'H'.repeat(33_333)}\n\n[... 150000 characters truncated ...]\n\n${'T'.repeat(16_667)}`)
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.ok(result?.kind === 'tool_result')
  const kept = { head: Math.floor(16_384 * 2 / 3), tail: 16_384 - Math.floor(16_384 * 2 / 3) }
  const marker = `[... ${200_000 - 16_384} of 200000 bytes truncated ...]`
  assert.equal(result.output, `${'H'.repeat(kept.head)}\n\n${marker}\n\n${'T'.repeat(kept.tail)}`)
  assert.equal(result.output.match(/truncated/g)?.length, 1, 'one marker, not the model\'s marker cut again')
  assert.deepEqual([result.truncated, result.original_bytes], [true, 200_000])
  assert.deepEqual([turn.tool_calls[0]?.output, turn.tool_calls[0]?.original_bytes], [result.output, 200_000])
})

test('a result within every bound carries neither truncated nor original_bytes', async (t) => {
  const g = await gateway(t)
  await writeFile(join(g.workspace, 'small.txt'), 'small')
  g.provider.enqueue({ toolCalls: [{ id: 's1', name: 'file_read', arguments: { path: 'small.txt' } }] }, { text: 'Small file.' })
  const { events } = await runTurn(g, { message: 'read small.txt' })
  const result = events.find((e) => e.event.kind === 'tool_result')?.event
  assert.ok(result?.kind === 'tool_result')
  assert.deepEqual([result.output, 'truncated' in result, 'original_bytes' in result], ['small', false, false])
})
