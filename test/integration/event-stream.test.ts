import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import { setTimeout as sleep } from 'node:timers/promises'
import { EventSource, type FetchLike } from 'eventsource'
import { TurnEvent } from '../../schemas/events.js'
import type { TestGateway } from '../helpers/gateway.js'
import { startProbeGateway } from '../helpers/tools.js'
import { finishedTurn, startTurn } from '../helpers/turns.js'
import { eventually } from '../helpers/eventually.js'

const risky = { id: 'c1', name: 'risky', arguments: { label: 'x' } }
/** Every event kind, from the schema (an EventSource dispatches each `event:` name to its own listeners). */
const TURN_EVENT_KINDS = TurnEvent.anyOf.map((s) => s.properties.kind.const as string)

interface SseFrame {
  id?: string
  event?: string
  data?: string
  comment?: string
}

/** Reads a text/event-stream body frame by frame (the parts of the format the gateway writes). */
class SseReader {
  readonly frames: SseFrame[] = []
  private buffer = ''
  private done = false
  private readonly pump: Promise<void>

  constructor (readonly response: Response, private readonly controller: AbortController) {
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    this.pump = (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) break
          this.buffer += decoder.decode(value, { stream: true })
          let end: number
          while ((end = this.buffer.indexOf('\n\n')) !== -1) {
            const block = this.buffer.slice(0, end)
            this.buffer = this.buffer.slice(end + 2)
            const frame: SseFrame = {}
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) frame.comment = line.slice(1).trim()
              else if (line.startsWith('id: ')) frame.id = line.slice(4)
              else if (line.startsWith('event: ')) frame.event = line.slice(7)
              else if (line.startsWith('data: ')) frame.data = line.slice(6)
            }
            this.frames.push(frame)
          }
        }
      } catch {}
      this.done = true
    })()
  }

  events (): SseFrame[] {
    return this.frames.filter((f) => f.id !== undefined)
  }

  async waitFor (match: (f: SseFrame) => boolean, what: string): Promise<SseFrame> {
    await eventually(() => this.frames.some(match), { what })
    return this.frames.find(match) as SseFrame
  }

  async ended (): Promise<void> {
    await eventually(() => this.done, { what: 'the stream to end' })
  }

  drop (): void {
    this.controller.abort()
  }

  async closed (): Promise<void> {
    await this.pump
  }
}

async function openStream (g: TestGateway, method: 'GET' | 'POST', path: string, options: { body?: unknown, lastEventId?: string } = {}): Promise<SseReader> {
  const controller = new AbortController()
  const headers: Record<string, string> = { accept: 'text/event-stream' }
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId
  const response = await fetch(`${g.url}${path}`, {
    method,
    headers,
    signal: controller.signal,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
  })
  assert.equal(response.status, 200, `${method} ${path} answered ${response.status}`)
  assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/)
  return new SseReader(response, controller)
}

/**
 * An EventSource (the real `eventsource` package) whose connections the test can cut like a
 * network failure; it records the Last-Event-ID each connection sent and the raw text received.
 */
function droppableEventSource (url: string): { source: EventSource, lastEventIds: Array<string | null>, raw: string[], cut: () => void } {
  const lastEventIds: Array<string | null> = []
  const raw: string[] = []
  const cuts: Array<() => void> = []
  const fetchLike: FetchLike = async (input, init) => {
    lastEventIds.push(new Headers(init.headers).get('last-event-id'))
    const response = await fetch(input, init)
    if (response.body === null) return response
    const reader = response.body.getReader()
    const decoder = new TextDecoder()
    let cutController!: ReadableStreamDefaultController<Uint8Array>
    const body = new ReadableStream<Uint8Array>({
      start (c) { cutController = c },
      async pull (c) {
        try {
          const { done, value } = await reader.read()
          if (done) c.close()
          else {
            raw.push(decoder.decode(value, { stream: true }))
            c.enqueue(value)
          }
        } catch (err) {
          c.error(err)
        }
      },
      async cancel () { await reader.cancel() }
    })
    cuts.push(() => {
      // Not an AbortError: EventSource treats it as a network failure and reconnects.
      cutController.error(new TypeError('network connection lost'))
      reader.cancel().catch(() => {})
    })
    return new Response(body, { status: response.status, headers: response.headers })
  }
  const source = new EventSource(url, { fetch: fetchLike })
  return { source, lastEventIds, raw, cut: () => { cuts.at(-1)?.() } }
}

test('an EventSource client resumes with Last-Event-ID after a drop with no gap and no duplicate; the drop cancels nothing', async (t) => {
  const { g, probes } = await startProbeGateway(t, { server: { sse_keepalive_ms: 100 } })
  g.provider.enqueue({ toolCalls: [risky] }, { text: 'all done' })
  const started = await startTurn(g, { message: 'go' })
  const es = droppableEventSource(`${g.url}/v1/turns/${started.turn_id}/events`)
  t.after(() => { es.source.close() })
  const received: Array<{ seq: number, kind: string, lastEventId: string }> = []
  for (const kind of TURN_EVENT_KINDS) {
    es.source.addEventListener(kind, (message) => {
      const envelope = JSON.parse(message.data) as { seq: number, event: { kind: string } }
      assert.equal(envelope.event.kind, kind)
      received.push({ seq: envelope.seq, kind, lastEventId: message.lastEventId })
    })
  }
  await eventually(() => received.some((r) => r.kind === 'approval.requested'), { what: 'approval.requested over the EventSource' })
  // Keep-alive comments flow while the turn waits for its approval.
  await eventually(() => es.raw.join('').split(': keep-alive\n\n').length > 3, { what: 'keep-alive comments while waiting' })
  const seenBeforeDrop = received.length
  es.cut()
  // The answer below completing the turn shows that dropping the GET stream cancelled nothing.
  assert.equal((await g.http('GET', `/v1/turns/${started.turn_id}`)).body.status, 'running', 'dropping the GET stream cancels nothing')

  const requestId = (await g.http('GET', '/v1/approvals?status=pending')).body.items[0].request_id
  assert.equal((await g.http('POST', `/v1/approvals/${requestId as string}`, { decision: 'yes' })).status, 200)
  const turn = await finishedTurn(g, started.turn_id)
  assert.equal(turn.status, 'completed')
  await eventually(() => received.some((r) => r.kind === 'turn.completed'), { what: 'the rest of the events after the reconnect', timeoutMs: 15_000 })
  // After the terminal event the stream ends; the next reconnect hears 204 and the client stops.
  await eventually(() => es.source.readyState === es.source.CLOSED, { what: 'the EventSource to stop after 204', timeoutMs: 15_000 })

  assert.deepEqual(received.map((r) => r.seq), Array.from({ length: turn.last_seq }, (_, i) => i + 1))
  assert.deepEqual(received.map((r) => r.lastEventId), received.map((r) => String(r.seq)))
  assert.deepEqual(es.lastEventIds.slice(0, 2), [null, String(seenBeforeDrop)])
  assert.equal(probes.runs.length, 1)
})

test('the GET stream of an ended turn replays it and ends, resuming after its last event is 204, and a malformed Last-Event-ID is refused', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ text: 'hello' })
  const started = await startTurn(g, { message: 'go' })
  const turn = await finishedTurn(g, started.turn_id)
  const stream = await openStream(g, 'GET', `/v1/turns/${started.turn_id}/events`)
  await stream.ended()
  assert.deepEqual(stream.events().map((f) => Number(f.id)), Array.from({ length: turn.last_seq }, (_, i) => i + 1))
  assert.equal(stream.events().at(-1)?.event, 'turn.completed')

  const tail = await openStream(g, 'GET', `/v1/turns/${started.turn_id}/events?after_seq=0`, { lastEventId: String(turn.last_seq - 1) })
  await tail.ended()
  assert.deepEqual(tail.events().map((f) => f.event), ['turn.completed'], 'Last-Event-ID wins over after_seq')

  const finished = await fetch(`${g.url}/v1/turns/${started.turn_id}/events`, { headers: { accept: 'text/event-stream', 'last-event-id': String(turn.last_seq) } })
  assert.equal(finished.status, 204)
  const bad = await fetch(`${g.url}/v1/turns/${started.turn_id}/events`, { headers: { accept: 'text/event-stream', 'last-event-id': 'seven' } })
  assert.deepEqual([bad.status, ((await bad.json()) as { code: string }).code], [400, 'INVALID_REQUEST'])
  const json = await g.http('GET', `/v1/turns/${started.turn_id}/events`)
  assert.equal(json.body.events.length, turn.last_seq, 'without the Accept header the answer is still the JSON page')
})

test('a POST stream owner that reconnects with Last-Event-ID within disconnect_grace_ms keeps its turn', async (t) => {
  const { g, probes } = await startProbeGateway(t, { turns: { disconnect_grace_ms: 1000 } })
  g.provider.enqueue({ toolCalls: [risky] }, { text: 'kept' })
  const owner = await openStream(g, 'POST', '/v1/turns', { body: { message: 'go' } })
  const asked = await owner.waitFor((f) => f.event === 'approval.requested', 'approval.requested on the POST stream')
  const turnId = owner.response.headers.get('x-turn-id') as string
  owner.drop()
  await owner.closed()
  // The scenario: the owner resumes before the grace ends; the turn must outlive the grace.
  const resumed = await openStream(g, 'GET', `/v1/turns/${turnId}/events`, { lastEventId: asked.id as string })
  // fixed wait: a negative check: no event marks "the grace passed and nothing was cancelled".
  await sleep(1500)
  assert.equal((await g.http('GET', `/v1/turns/${turnId}`)).body.status, 'running', 'kept past the grace')

  const requestId = (JSON.parse(asked.data as string) as { event: { request_id: string } }).event.request_id
  assert.equal((await g.http('POST', `/v1/approvals/${requestId}`, { decision: 'yes' })).status, 200)
  await resumed.ended()
  const turn = await finishedTurn(g, turnId)
  assert.equal(turn.status, 'completed')
  const from = Number(asked.id)
  assert.deepEqual(resumed.events().map((f) => Number(f.id)), Array.from({ length: turn.last_seq - from }, (_, i) => from + 1 + i))
  assert.equal(probes.runs.length, 1)
})

test('a POST stream owner that does not come back within disconnect_grace_ms has its turn cancelled, the wait audited as cancelled', async (t) => {
  const { g, probes } = await startProbeGateway(t, { turns: { disconnect_grace_ms: 300 } })
  g.provider.enqueue({ toolCalls: [risky] })
  const owner = await openStream(g, 'POST', '/v1/turns', { body: { message: 'go' } })
  await owner.waitFor((f) => f.event === 'approval.requested', 'approval.requested on the POST stream')
  const turnId = owner.response.headers.get('x-turn-id') as string
  owner.drop()
  const turn = await finishedTurn(g, turnId)
  assert.equal(turn.status, 'cancelled')
  assert.deepEqual([turn.tool_calls[0].status, turn.approvals[0].decision], ['cancelled', 'cancelled'])
  assert.equal(probes.runs.length, 0)
})

test('a POST stream starts with turn.started and has every event once; repeating its idempotency key streams the same turn from seq 1', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ text: 'hello' })
  const body = { message: 'go', idempotency_key: 'sse-once' }
  const first = await openStream(g, 'POST', '/v1/turns', { body })
  await first.ended()
  const turnId = first.response.headers.get('x-turn-id') as string
  const turn = await finishedTurn(g, turnId)
  const seqs = Array.from({ length: turn.last_seq }, (_, i) => i + 1)
  assert.deepEqual(first.events().map((f) => Number(f.id)), seqs)
  assert.equal(first.events()[0]?.event, 'turn.started')
  assert.equal(first.events().at(-1)?.event, 'turn.completed')

  // The repeat starts nothing (the provider has no second answer queued): it replays the turn.
  const again = await openStream(g, 'POST', '/v1/turns', { body })
  await again.ended()
  assert.equal(again.response.headers.get('x-turn-id'), turnId)
  assert.deepEqual(again.events().map((f) => Number(f.id)), seqs)
  assert.deepEqual(again.events().map((f) => f.event), first.events().map((f) => f.event))
})

/**
 * The raw bytes of a `POST /v1/turns` SSE exchange, read chunk by chunk by a client on a thread of
 * its own: its reads follow the server's writes as they arrive, where a client on the server's
 * event loop would read only after both writes of the same run.
 */
const RAW_SSE_CLIENT = `
const { connect } = require('node:net')
const { parentPort, workerData } = require('node:worker_threads')
const { host, port, body } = workerData
const socket = connect({ host, port })
const chunks = []
socket.on('data', (chunk) => { chunks.push(chunk.toString('utf8')) })
socket.on('end', () => { parentPort.postMessage({ chunks }) })
socket.on('error', (err) => { parentPort.postMessage({ error: String(err) }) })
socket.write(['POST /v1/turns HTTP/1.1', 'Host: ' + host + ':' + port, 'Content-Type: application/json', 'Accept: text/event-stream',
  'Content-Length: ' + Buffer.byteLength(body), 'Connection: close', '', body].join('\\r\\n'))
`

test('a POST stream sends its headers and turn.started in one write: the first bytes the client reads hold both', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ text: 'hello' })
  const { hostname, port } = new URL(g.url)
  const worker = new Worker(RAW_SSE_CLIENT, { eval: true, workerData: { host: hostname, port: Number(port), body: JSON.stringify({ message: 'go' }) } })
  t.after(async () => { await worker.terminate() })
  const [answer] = await once(worker, 'message') as [{ chunks?: string[], error?: string }]
  assert.equal(answer.error, undefined)
  const chunks = answer.chunks ?? []
  const first = chunks[0] ?? ''
  const head = first.indexOf('\r\n\r\n')
  assert.match(first, /^HTTP\/1\.1 200 /)
  assert.ok(head !== -1, `the first read holds the whole header block: ${JSON.stringify(first)}`)
  // One segment: headers written on their own arrive in a read of their own, the frame in a later one.
  assert.match(first.slice(head + 4), /event: turn\.started\n/, `the first read holds turn.started too: ${JSON.stringify(first)}`)
  assert.match(chunks.join(''), /event: turn\.completed\n/)
})

test('a stream resuming past the running turn\'s last seq answers its headers before any event and ends when the turn does', { timeout: 10_000 }, async (t) => {
  // Keep-alive comments off: before the fix the headers waited for the first body bytes, which never came.
  const { g } = await startProbeGateway(t, { server: { sse_keepalive_ms: 0 } })
  g.provider.enqueue({ toolCalls: [risky] }, { text: 'all done' })
  const started = await startTurn(g, { message: 'go' })
  await eventually(async () => (await g.http('GET', '/v1/approvals?status=pending')).body.items.length === 1, { what: 'the approval request' })
  const ahead = await openStream(g, 'GET', `/v1/turns/${started.turn_id}/events`, { lastEventId: '999999999' })
  assert.equal((await g.http('GET', `/v1/turns/${started.turn_id}`)).body.status, 'running', 'the headers came while the turn was still waiting')
  assert.deepEqual(ahead.frames, [])

  const requestId = (await g.http('GET', '/v1/approvals?status=pending')).body.items[0].request_id
  assert.equal((await g.http('POST', `/v1/approvals/${requestId as string}`, { decision: 'yes' })).status, 200)
  await ahead.ended()
  assert.equal((await finishedTurn(g, started.turn_id)).status, 'completed')
  assert.deepEqual(ahead.frames, [], 'nothing after seq 999999999 exists, so nothing was sent')
})

test('a stream resuming at the running turn\'s last seq answers its headers at once and gets every later event', { timeout: 10_000 }, async (t) => {
  const { g } = await startProbeGateway(t, { server: { sse_keepalive_ms: 0 } })
  g.provider.enqueue({ toolCalls: [risky] }, { text: 'all done' })
  const started = await startTurn(g, { message: 'go' })
  await eventually(async () => (await g.http('GET', '/v1/approvals?status=pending')).body.items.length === 1, { what: 'the approval request' })
  const { last_seq: lastSeq } = (await g.http('GET', `/v1/turns/${started.turn_id}`)).body as { last_seq: number }
  const tail = await openStream(g, 'GET', `/v1/turns/${started.turn_id}/events?after_seq=${lastSeq}`)
  assert.deepEqual(tail.frames, [])

  const requestId = (await g.http('GET', '/v1/approvals?status=pending')).body.items[0].request_id
  assert.equal((await g.http('POST', `/v1/approvals/${requestId as string}`, { decision: 'yes' })).status, 200)
  await tail.ended()
  const turn = await finishedTurn(g, started.turn_id)
  assert.deepEqual(tail.events().map((f) => Number(f.id)), Array.from({ length: turn.last_seq - lastSeq }, (_, i) => lastSeq + 1 + i))
  assert.equal(tail.events()[0]?.event, 'approval.resolved')
  assert.equal(tail.events().at(-1)?.event, 'turn.completed')
})

test('an event cursor that is not an exact seq is refused with 400 INVALID_REQUEST on the JSON page and the stream', async (t) => {
  const { g } = await startProbeGateway(t)
  g.provider.enqueue({ text: 'hello' })
  const { turn_id: turnId } = await startTurn(g, { message: 'go' })
  await finishedTurn(g, turnId)
  const path = `/v1/turns/${turnId}/events`
  const refused = async (query: string, headers: Record<string, string>): Promise<[number, string]> => {
    const res = await g.http('GET', `${path}${query}`, undefined, headers)
    return [res.status, res.body.code]
  }
  for (const accept of [{}, { accept: 'text/event-stream' }] as Array<Record<string, string>>) {
    for (const bad of ['1e400', '-1', '1.5', '9007199254740992', 'Infinity', 'NaN', '']) {
      assert.deepEqual(await refused(`?after_seq=${bad}`, accept), [400, 'INVALID_REQUEST'], `after_seq=${bad} ${JSON.stringify(accept)}`)
    }
    for (const bad of ['1e400', '-1', '1.5', '9007199254740992', '99999999999999999999', '01', '0x10']) {
      assert.deepEqual(await refused('', { ...accept, 'last-event-id': bad }), [400, 'INVALID_REQUEST'], `Last-Event-ID ${bad} ${JSON.stringify(accept)}`)
    }
  }
  // The largest exact cursor is a valid resume point: the page is empty, the stream of the ended turn 204.
  const page = await g.http('GET', `${path}?after_seq=9007199254740991`)
  assert.deepEqual([page.status, page.body.events], [200, []])
  const stream = await fetch(`${g.url}${path}`, { headers: { accept: 'text/event-stream', 'last-event-id': '9007199254740991' } })
  assert.equal(stream.status, 204)
})
