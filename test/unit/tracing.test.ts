import { test } from 'node:test'
import assert from 'node:assert/strict'
import { INVALID_SPAN_CONTEXT, trace, type Span, type Tracer, type TracerProvider } from '@opentelemetry/api'
import type { ObserverEvent } from '../../src/observe/observer.js'
import { TracingObserver } from '../../src/observe/tracing.js'

const correlation = { turn_id: 'turn_1', session_id: 'ses_1', agent: 'default', channel: 'http' }

const TURN: ObserverEvent[] = [
  { kind: 'turn_start', provider: 'fake', provider_kind: 'openai', model: 'm', ...correlation },
  { kind: 'iteration', n: 1, delegate_depth: 0, ...correlation },
  { kind: 'llm_request', provider: 'fake', provider_kind: 'openai', model: 'm', messages: 2, tools: 1, ...correlation },
  { kind: 'llm_response', provider: 'fake', model: 'm', duration_ms: 5, success: true, ...correlation },
  { kind: 'tool_call_start', tool: 'probe', call_id: 'call_1', arguments: {}, ...correlation },
  { kind: 'tool_call', tool: 'probe', call_id: 'call_1', arguments: {}, duration_ms: 1, success: true, status: 'ok', result: 'x', ...correlation },
  { kind: 'turn_end', status: 'completed', duration_ms: 9, iterations: 1, ...correlation }
]

/** A provider like the API's default without an SDK: every span is non-recording. */
function countingNoopProvider (): { provider: TracerProvider, started: string[] } {
  const started: string[] = []
  const tracer: Tracer = {
    startSpan (name: string): Span {
      started.push(name)
      return trace.wrapSpanContext(INVALID_SPAN_CONTEXT)
    },
    startActiveSpan (): never { throw new Error('not used') }
  }
  return { provider: { getTracer: () => tracer }, started }
}

test('without a recording SDK only the turn span is attempted and nothing is kept for its children', () => {
  const { provider, started } = countingNoopProvider()
  const observer = new TracingObserver(provider)
  for (const event of TURN) observer.record(event)
  assert.deepEqual(started, ['invoke_agent default'])
})

test('records of a turn the observer never saw start are ignored', () => {
  const { provider, started } = countingNoopProvider()
  const observer = new TracingObserver(provider)
  for (const event of TURN.slice(1)) observer.record(event)
  assert.deepEqual(started, [])
})
