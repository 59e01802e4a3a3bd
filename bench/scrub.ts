/**
 * `npm run bench:scrub`: what secret scrubbing costs per KiB of text, next to two baselines
 * measured in the same run on the same text: `JSON.stringify` (which every event and log line
 * pays anyway) and a plain `String.prototype.indexOf` scan (the least any look at the text costs).
 * The goal is at most 5 µs/KiB for scrubText on ordinary text of every kind; the report says which
 * pass. Text that is a secret every other line is shown too, as the worst case, outside the goal:
 * each secret found costs a rule match and a mask.
 */
import { randomBytes } from 'node:crypto'
import { scrubLogLine } from '../src/core/security/log-scrub.js'
import { scrubText, scrubValue } from '../src/core/security/redact.js'
import { StreamedTextScrubber } from '../src/core/security/text-stream.js'
import { corpusText, secretCorpus } from '../test/helpers/secret-corpus.js'
import { int, KnobError } from './knobs.js'
import { fmt } from './stats.js'

const GOAL_US_PER_KIB = 5
const TEXT_BYTES = 64 * 1024
const MIN_SAMPLE_MS = 200
const ROUNDS = scrubRounds()

function scrubRounds (): number {
  try {
    return int(process.env, 'BENCH_SCRUB_ROUNDS', 5, 1, 1000)
  } catch (err) {
    if (!(err instanceof KnobError)) throw err
    process.stderr.write(`bench:scrub: ${err.message}\n`)
    process.exit(2)
  }
}

function repeatTo (piece: string, bytes: number): string {
  return piece.repeat(Math.ceil(bytes / piece.length)).slice(0, bytes)
}

function logLines (): string {
  const line = (i: number): string => JSON.stringify({
    level: 30, time: 1711547700000 + i, pid: 4242, hostname: 'gw-1', turn_id: `turn_${i}`, msg: 'tool call finished',
    tool: 'http_request', status: 'ok', duration_ms: i % 97, url: `https://api.example.com/v1/items/${i}?page=2`
  })
  return repeatTo(Array.from({ length: 50 }, (_, i) => line(i)).join('\n') + '\n', TEXT_BYTES)
}

function jsonOutput (): string {
  const items = Array.from({ length: 400 }, (_, i) => ({
    id: i, key: `item-${i}`, name: `Widget ${i}`, tags: ['alpha', 'beta'], price: i * 1.5,
    description: 'An ordinary product description with a few words in it.', token_count: i * 3
  }))
  return repeatTo(JSON.stringify(items, null, 2), TEXT_BYTES)
}

function shellOutput (): string {
  const listing = Array.from({ length: 60 }, (_, i) =>
    `-rw-r--r-- 1 app app ${1000 + i * 37} Mar 27 12:${String(i % 60).padStart(2, '0')} src/module_${i}.ts`).join('\n')
  const code = [
    'export function handler (req, res) {',
    '  const token = req.headers.authorization?.slice(7)',
    '  if (token === undefined) return res.status(401).send()',
    '  return res.send({ ok: true })',
    '}'
  ].join('\n')
  return repeatTo(`${listing}\n${code}`, TEXT_BYTES)
}

function base64Blob (): string {
  return repeatTo(randomBytes(TEXT_BYTES).toString('base64').replace(/.{76}/g, '$&\n'), TEXT_BYTES)
}

function denseSecrets (): string {
  return repeatTo(`${corpusText(secretCorpus())}\n`, TEXT_BYTES)
}

/** A model's answer: prose, a list and a code block, as it streams. */
function modelAnswer (): string {
  const answer = [
    'Here is how to configure the deployment. First, set the environment variables in your shell profile,',
    'then restart the service so that it picks them up:',
    '',
    '1. `DATABASE_URL` points at the primary database;',
    '2. `LOG_LEVEL=info` keeps the logs readable;',
    '3. the worker count follows the number of cores.',
    '',
    '```ts',
    'export function handler (req: Request): Response {',
    '  return new Response(JSON.stringify({ ok: true }), { status: 200 })',
    '}',
    '```',
    ''
  ].join('\n')
  return repeatTo(answer, TEXT_BYTES)
}

/** Pieces of about four characters, as model tokens stream. */
function tokens (text: string): string[] {
  return text.match(/[\s\S]{1,4}/g) ?? []
}

/** µs per KiB of one function over one text: runs for at least MIN_SAMPLE_MS, best of ROUNDS. */
function measure (text: string, fn: (text: string) => unknown): number {
  const kib = Buffer.byteLength(text) / 1024
  for (let i = 0; i < 20; i++) fn(text)
  let best = Number.POSITIVE_INFINITY
  for (let round = 0; round < ROUNDS; round++) {
    let runs = 0
    const start = performance.now()
    let elapsed = 0
    while (elapsed < MIN_SAMPLE_MS) {
      fn(text)
      runs++
      elapsed = performance.now() - start
    }
    best = Math.min(best, (elapsed * 1000) / runs / kib)
  }
  return best
}

const texts: Array<[string, string, boolean]> = [
  ['log lines (JSON)', logLines(), true],
  ['JSON tool output', jsonOutput(), true],
  ['shell output and code', shellOutput(), true],
  ['base64 blob', base64Blob(), true],
  ['secrets every other line (worst case)', denseSecrets(), false]
]

const rows: string[] = []
let failures = 0
for (const [name, text, goal] of texts) {
  const scrub = measure(text, (t) => scrubText(t))
  const stringify = measure(text, (t) => JSON.stringify(t))
  const indexOf = measure(text, (t) => t.indexOf('\u0001'))
  const ok = scrub <= GOAL_US_PER_KIB
  if (goal && !ok) failures++
  const verdict = goal ? (ok ? 'yes' : 'NO') : 'not a goal'
  rows.push(`| ${name} | ${fmt(scrub)} | ${fmt(stringify)} | ${fmt(indexOf, 3)} | ${fmt(scrub / stringify)}× | ${verdict} |`)
}

const logText = logLines()
const logLinesOnly = logText.split('\n').filter((l) => l !== '')
const perLine = measure(logText, () => { for (const line of logLinesOnly) scrubLogLine(`${line}\n`) })
const parsed = JSON.parse(jsonOutput().slice(0, jsonOutput().lastIndexOf('}') + 1) + ']') as unknown
const valueText = JSON.stringify(parsed)
const valueCost = measure(valueText, () => scrubValue(parsed))

const answer = modelAnswer()
const pieces = tokens(answer)
const streamed = measure(answer, () => {
  const scrubber = new StreamedTextScrubber()
  for (const piece of pieces) scrubber.push(piece)
  scrubber.end()
})
const whole = measure(answer, (t) => scrubText(t))
const deltaEvents = measure(answer, () => { for (const piece of pieces) JSON.stringify({ kind: 'text.delta', text: piece }) })
const perPieceUs = (usPerKib: number): number => usPerKib * (Buffer.byteLength(answer) / 1024) / pieces.length

console.log(`# Scrubbing cost (µs per KiB, best of ${ROUNDS} rounds of ≥ ${MIN_SAMPLE_MS} ms; goal ≤ ${GOAL_US_PER_KIB})\n`)
console.log('| text (64 KiB) | scrubText | JSON.stringify | indexOf scan | scrub / stringify | within goal |')
console.log('|---|---|---|---|---|---|')
for (const row of rows) console.log(row)
console.log('')
console.log(`scrubLogLine over the same log lines, one call per line: ${fmt(perLine)} µs/KiB`)
console.log(`scrubValue over the parsed JSON tool output: ${fmt(valueCost)} µs/KiB of its serialisation`)
console.log('')
console.log(`a model answer streamed in ${pieces.length} pieces of 4 characters (64 KiB): StreamedTextScrubber ${fmt(streamed)} µs/KiB ` +
  `(${fmt(perPieceUs(streamed), 3)} µs per piece), scrubText of the whole answer once ${fmt(whole)} µs/KiB, ` +
  `JSON.stringify of each piece's text.delta event ${fmt(deltaEvents)} µs/KiB (${fmt(perPieceUs(deltaEvents), 3)} µs per piece)`)
if (failures > 0) {
  console.log(`\n${failures} text kind(s) over the goal`)
  process.exitCode = 1
}
