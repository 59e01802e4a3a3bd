/**
 * Streaming section's clients: `streams` concurrent SSE requests to one runner, all started at
 * once, each read to its end. Every received piece of answer text is split into the provider's
 * tokens (each one its send time, see encodeSendTime); a token's delivery latency is the moment
 * the bytes holding its end arrived here (read before parsing) minus its send time, both from
 * process.hrtime, which on Linux reads CLOCK_MONOTONIC, shared by every process of the machine.
 */
import { Agent, request } from 'undici'
import { announceReady, monotonicNs, serveCommands } from './ipc.js'
import { summarize } from './stats.js'
import { decodeSendTime, SEND_TIME_LETTERS } from './workload.js'

/** How each runner frames a text delta: Tollgate `text.delta` events, the relay `{delta}`, the AI SDK UI message stream `text-delta`. */
export type StreamKind = 'tollgate' | 'relay' | 'ai-sdk'

const NS_PER_MS = 1_000_000

/** The answer text an SSE frame carries, or null (another event, a comment, the end marker). */
function textOf (kind: StreamKind, frame: string): string | null {
  let data = ''
  let event = ''
  for (const line of frame.split('\n')) {
    if (line.startsWith('data: ')) data += line.slice(6)
    else if (line.startsWith('event: ')) event = line.slice(7)
  }
  if (data === '' || data === '[DONE]') return null
  switch (kind) {
    case 'tollgate': {
      if (event !== 'text.delta') return null
      const wire = JSON.parse(data) as { event?: { text?: unknown } }
      return typeof wire.event?.text === 'string' ? wire.event.text : null
    }
    case 'relay': {
      const piece = (JSON.parse(data) as { delta?: unknown }).delta
      return typeof piece === 'string' ? piece : null
    }
    case 'ai-sdk': {
      const part = JSON.parse(data) as { type?: string, delta?: unknown }
      return part.type === 'text-delta' && typeof part.delta === 'string' ? part.delta : null
    }
  }
}

interface StreamOutcome { tokens: number, latencies: number[] }

async function oneStream (kind: StreamKind, url: string, body: string, dispatcher: Agent): Promise<StreamOutcome> {
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body, dispatcher })
  if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${(await res.body.text()).slice(0, 300)}`)
  const latencies: number[] = []
  let frames = ''
  let text = ''
  for await (const piece of res.body) {
    const at = monotonicNs()
    frames += (piece as Buffer).toString('utf8')
    for (let end = frames.indexOf('\n\n'); end !== -1; end = frames.indexOf('\n\n')) {
      const delta = textOf(kind, frames.slice(0, end))
      frames = frames.slice(end + 2)
      if (delta === null) continue
      // Tokens are fixed-width words: one is delivered when its last letter is, whether or not
      // its space came with it (Tollgate holds trailing whitespace until more text follows).
      text += delta.replaceAll(' ', '')
      while (text.length >= SEND_TIME_LETTERS) {
        const sent = decodeSendTime(text.slice(0, SEND_TIME_LETTERS))
        if (sent === null) throw new Error(`not a send-time token: ${JSON.stringify(text.slice(0, SEND_TIME_LETTERS))}`)
        text = text.slice(SEND_TIME_LETTERS)
        latencies.push(Number(at - sent) / NS_PER_MS)
      }
    }
  }
  if (text !== '') throw new Error(`the stream ended inside a token: ${JSON.stringify(text)}`)
  return { tokens: latencies.length, latencies }
}

async function main (): Promise<void> {
  serveCommands({
    run: async (m) => {
      const kind = m.kind as StreamKind
      const streams = Number(m.streams)
      const expected = Number(m.tokens)
      const dispatcher = new Agent({ connections: streams, headersTimeout: 60_000, bodyTimeout: 60_000 })
      const bodies = m.bodies as Array<Record<string, unknown>>
      const latencies: number[] = []
      let deltas = 0
      let errors = 0
      let firstError: string | null = null
      const t0 = monotonicNs()
      try {
        await Promise.all(bodies.map(async (b) => {
          try {
            const outcome = await oneStream(kind, String(m.url), JSON.stringify(b), dispatcher)
            deltas += outcome.tokens
            for (const l of outcome.latencies) latencies.push(l)
            if (outcome.tokens !== expected) throw new Error(`a stream delivered ${outcome.tokens} of ${expected} tokens`)
          } catch (err) {
            errors++
            firstError ??= err instanceof Error ? err.message : String(err)
          }
        }))
      } finally {
        await dispatcher.close()
      }
      return { deltas, errors, firstError, seconds: Number(monotonicNs() - t0) / 1e9, latency: summarize(latencies) }
    }
  })
  announceReady()
}

void main()
