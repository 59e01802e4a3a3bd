/**
 * Time from starting a turn to its first event, as a client sees it, one turn at a time:
 * `POST /v1/turns` with `Accept: text/event-stream` until the first SSE event (turn.started), and
 * a `turn.start` frame on an open WebSocket until the first event frame. Each turn is run to its
 * end before the next starts, so the figure is not queueing behind other turns.
 */
import { Agent, request } from 'undici'
import { WebSocket } from 'ws'
import { announceReady, monotonicNs, serveCommands } from './ipc.js'
import { closeSockets, openSockets } from './ws-clients.js'
import { TURN_MESSAGE } from './workload.js'

const NS_PER_MS = 1_000_000
const BODY = { message: TURN_MESSAGE, interactive: false }

async function sseSample (url: string, dispatcher: Agent): Promise<number> {
  const t0 = monotonicNs()
  const res = await request(`${url}/v1/turns`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify(BODY), dispatcher })
  if (res.statusCode !== 200) throw new Error(`SSE start answered HTTP ${res.statusCode}: ${(await res.body.text()).slice(0, 300)}`)
  let text = ''
  let first: bigint | null = null
  for await (const chunk of res.body) {
    text += (chunk as Buffer).toString('utf8')
    if (first === null && text.includes('\n\n')) {
      first = monotonicNs()
      const event = text.slice(0, text.indexOf('\n\n'))
      if (!event.includes('event: turn.started')) throw new Error(`first SSE event is not turn.started: ${event.slice(0, 200)}`)
    }
  }
  if (first === null) throw new Error('the SSE stream ended without an event')
  if (!text.includes('event: turn.completed')) throw new Error('the SSE stream ended without turn.completed')
  return Number(first - t0) / NS_PER_MS
}

function wsSample (ws: WebSocket, ref: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let first: bigint | null = null
    const t0 = monotonicNs()
    const onMessage = (data: Buffer): void => {
      const at = monotonicNs()
      const frame = JSON.parse(data.toString('utf8')) as { type?: string, ref?: string, event?: { kind?: string }, message?: string }
      if (frame.type === 'error') {
        ws.off('message', onMessage)
        reject(new Error(`turn.start refused: ${String(frame.message)}`))
        return
      }
      if (frame.type !== 'event') return
      if (first === null) {
        if (frame.event?.kind !== 'turn.started') {
          ws.off('message', onMessage)
          reject(new Error(`first event is ${String(frame.event?.kind)}, not turn.started`))
          return
        }
        first = at
      }
      const kind = frame.event?.kind ?? ''
      if (kind === 'turn.completed' || kind === 'turn.failed' || kind === 'turn.cancelled') {
        ws.off('message', onMessage)
        if (kind !== 'turn.completed') reject(new Error(`turn ended with ${kind}`))
        else resolve(Number(first - t0) / NS_PER_MS)
      }
    }
    ws.on('message', onMessage)
    ws.send(JSON.stringify({ type: 'turn.start', ...BODY, ref }))
  })
}

async function main (): Promise<void> {
  const dispatcher = new Agent({ connections: 1, headersTimeout: 30_000, bodyTimeout: 30_000 })
  serveCommands({
    sse: async (m) => {
      for (let i = 0; i < Number(m.warmup); i++) await sseSample(String(m.url), dispatcher)
      const latencies: number[] = []
      for (let i = 0; i < Number(m.samples); i++) latencies.push(await sseSample(String(m.url), dispatcher))
      return { latencies }
    },
    ws: async (m) => {
      const opened = await openSockets(`${String(m.url).replace(/^http/, 'ws')}/v1/ws`, 1, 1)
      const ws = opened.sockets[0]
      if (ws === undefined) throw new Error(`cannot open a WebSocket: ${opened.firstError ?? 'unknown'}`)
      try {
        for (let i = 0; i < Number(m.warmup); i++) await wsSample(ws, `w${i}`)
        const latencies: number[] = []
        for (let i = 0; i < Number(m.samples); i++) latencies.push(await wsSample(ws, `t${i}`))
        return { latencies }
      } finally {
        await closeSockets([ws])
      }
    },
    close: async () => {
      await dispatcher.close()
      return {}
    }
  })
  announceReady()
}

void main()
