import { test } from 'node:test'
import assert from 'node:assert/strict'
import { GatewayMetrics } from '../../src/observe/metrics.js'
import { parseExposition, valueOf } from '../helpers/prometheus.js'

const correlation = { turn_id: 'turn_1', session_id: 'ses_1', agent: 'default', channel: 'http' }

function metrics (known: string[] = ['probe']): GatewayMetrics {
  return new GatewayMetrics({
    prefix: 't_',
    processMetrics: false,
    sources: { activeTurns: () => 3, wsConnections: () => 2, isKnownTool: (name) => known.includes(name) }
  })
}

test('a tool name outside the catalog is counted under _unknown', async () => {
  const m = metrics()
  for (const tool of ['probe', 'made_up_1', 'made_up_2']) {
    m.record({ kind: 'tool_call', tool, call_id: 'c', arguments: {}, duration_ms: 1500, success: false, status: 'error', result: '', ...correlation })
  }
  const samples = await parseExposition(await m.exposition())
  assert.equal(valueOf(samples, 't_tool_calls_total', { tool: 'probe', status: 'error' }), 1)
  assert.equal(valueOf(samples, 't_tool_calls_total', { tool: '_unknown', status: 'error' }), 2)
  assert.equal(valueOf(samples, 't_tool_call_duration_seconds_sum', { tool: 'probe' }), 1.5)
})

test('gauges read their sources at scrape time', async () => {
  const samples = await parseExposition(await metrics().exposition())
  assert.equal(valueOf(samples, 't_turns_active'), 3)
  assert.equal(valueOf(samples, 't_ws_connections'), 2)
})

test('nonsense token counts from a provider are ignored instead of throwing', async () => {
  const m = metrics()
  m.record({ kind: 'llm_response', provider: 'p', model: 'm', duration_ms: 1, success: true, input_tokens: -5, output_tokens: Number.NaN, ...correlation })
  m.record({ kind: 'llm_response', provider: 'p', model: 'm', duration_ms: 1, success: true, input_tokens: 4, ...correlation })
  const samples = await parseExposition(await m.exposition())
  assert.equal(valueOf(samples, 't_provider_tokens_total', { token_type: 'input' }), 4)
  assert.equal(valueOf(samples, 't_provider_tokens_total', { token_type: 'output' }), 0)
  assert.equal(valueOf(samples, 't_provider_request_duration_seconds_count', { outcome: 'ok' }), 2)
})

test('kinds the metrics do not use are ignored', async () => {
  const m = metrics()
  m.record({ kind: 'tool_call_start', tool: 'probe', call_id: 'c', arguments: {}, ...correlation })
  m.record({ kind: 'future_kind' } as never)
  assert.equal(valueOf(await parseExposition(await m.exposition()), 't_tool_calls_total', { tool: 'probe' }), 0)
})

test('close empties the registry', async () => {
  const m = metrics()
  m.close()
  assert.equal(await m.exposition(), '\n')
})
