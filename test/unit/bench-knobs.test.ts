import { test } from 'node:test'
import assert from 'node:assert/strict'
import { KnobError, readKnobs } from '../../bench/knobs.js'
import { ratioOverLoads } from '../../bench/report.js'

test('bench settings default to the documented run when no BENCH_ variable is set', () => {
  const knobs = readKnobs({}, 20_000, 'bench/results.md')
  assert.deepEqual({ ...knobs, sections: [...knobs.sections] }, {
    concurrency: 16,
    warmupMs: 2000,
    durationMs: 4000,
    rounds: 3,
    toolCallsMs: 3000,
    cancelSamples: 200,
    cancelLoadMs: 8000,
    stream: false,
    idleConnections: 10_000,
    idleProcesses: 4,
    fanoutSubscribers: 1000,
    fanoutProcesses: 4,
    fanoutTurns: 5,
    firstEventSamples: 200,
    streamLoads: [50, 100, 200],
    streamRounds: 3,
    streamTokens: 200,
    streamIntervalMs: 20,
    parserStreams: 400,
    parserConcurrency: 8,
    parserRounds: 3,
    parserTextDeltas: 200,
    sections: ['throughput', 'tool-calls', 'cancel', 'first-event', 'idle', 'fanout', 'streaming', 'parsers'],
    resultsPath: 'bench/results.md',
    verbose: false
  })
})

test('a malformed or out-of-range BENCH_ value is refused with the variable named', () => {
  assert.throws(() => readKnobs({ BENCH_CONCURRENCY: '0' }, 20_000, ''), (err: unknown) => err instanceof KnobError && /BENCH_CONCURRENCY must be an integer from 1 to 256/.test(err.message))
  assert.throws(() => readKnobs({ BENCH_ROUNDS: '2.5' }, 20_000, ''), /BENCH_ROUNDS/)
  assert.throws(() => readKnobs({ BENCH_STREAM_ROUNDS: '0' }, 20_000, ''), /BENCH_STREAM_ROUNDS must be an integer from 1 to 20/)
  assert.throws(() => readKnobs({ BENCH_PROVIDER_STREAM: 'yes' }, 20_000, ''), /BENCH_PROVIDER_STREAM must be 0 or 1/)
  assert.throws(() => readKnobs({ BENCH_ONLY: 'throughput,nope' }, 20_000, ''), /unknown section "nope"/)
})

test('idle connections are bounded by the open-file limit of the gateway process, which holds them all', () => {
  assert.throws(() => readKnobs({ BENCH_IDLE_CONNECTIONS: '10000' }, 4096, ''), /BENCH_IDLE_CONNECTIONS must be an integer from 1 to 3596/)
  assert.equal(readKnobs({ BENCH_IDLE_CONNECTIONS: '3596' }, 4096, '').idleConnections, 3596)
})

test('BENCH_ONLY picks the sections to run and BENCH_RESULTS empty writes no report file', () => {
  const knobs = readKnobs({ BENCH_ONLY: 'idle, fanout', BENCH_RESULTS: '' }, 20_000, 'bench/results.md')
  assert.deepEqual([...knobs.sections], ['idle', 'fanout'])
  assert.equal(knobs.resultsPath, '')
})

test('a streaming ratio over several loads is their median, with the lowest and highest beside it', () => {
  assert.equal(ratioOverLoads([2.37, 1.54, 1.91]), '1.91× (1.54–2.37×)')
  // An even count: the mean of the middle two.
  assert.equal(ratioOverLoads([1.2, 1.8, 1.4, 2]), '1.60× (1.20–2.00×)')
  assert.equal(ratioOverLoads([1.5]), '1.50×')
  // A load whose figure is missing (no /proc, nothing delivered) is left out, not counted as zero.
  assert.equal(ratioOverLoads([Number.NaN, 1.5, Number.POSITIVE_INFINITY]), '1.50×')
  assert.equal(ratioOverLoads([Number.NaN]), 'n/a')
})
