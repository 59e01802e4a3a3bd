/**
 * Cancel latency, as a client sees it: on one WebSocket, start a turn whose provider call the
 * fake provider holds (`hold:` message), wait until its `iteration` event says the model call is
 * under way, send `cancel`, and time from sending the frame to the turn's terminal event frame,
 * which must be `turn.cancelled`. One turn at a time, until `samples` or the deadline.
 */
import type { WebSocket } from 'ws'
import { announceReady, monotonicNs, serveCommands } from './ipc.js'
import { closeSockets, openSockets } from './ws-clients.js'
import { HOLD_PREFIX } from './workload.js'

const NS_PER_MS = 1_000_000
const TERMINAL = new Set(['turn.completed', 'turn.failed', 'turn.cancelled'])

interface Frame { type?: string, ref?: string, turn_id?: string, message?: string, event?: { kind?: string } }

/**
 * One sample. The socket owns one turn at a time, so every event frame is this turn's; its
 * `iteration` may arrive before `turn.accepted` (both come from starting the turn).
 */
function sample (ws: WebSocket, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ref = `s-${key}`
    let turnId: string | null = null
    let iterating = false
    let t0: bigint | null = null
    const timer = setTimeout(() => { finish(new Error(`no terminal event within 30 s (turn ${String(turnId)})`)) }, 30_000)
    const finish = (outcome: Error | number): void => {
      clearTimeout(timer)
      ws.off('message', onMessage)
      if (outcome instanceof Error) reject(outcome)
      else resolve(outcome)
    }
    const cancelWhenRunning = (): void => {
      if (turnId === null || !iterating || t0 !== null) return
      t0 = monotonicNs()
      ws.send(JSON.stringify({ type: 'cancel', turn_id: turnId, ref: `c-${key}` }))
    }
    const onMessage = (data: Buffer): void => {
      const at = monotonicNs()
      const frame = JSON.parse(data.toString('utf8')) as Frame
      if (frame.type === 'error') {
        finish(new Error(`refused: ${String(frame.message)}`))
        return
      }
      if (frame.type === 'turn.accepted' && frame.ref === ref) {
        turnId = String(frame.turn_id)
        cancelWhenRunning()
        return
      }
      if (frame.type !== 'event') return
      const kind = frame.event?.kind ?? ''
      if (kind === 'iteration') {
        iterating = true
        cancelWhenRunning()
      } else if (TERMINAL.has(kind)) {
        if (t0 === null) finish(new Error(`the turn ended with ${kind} before it was cancelled`))
        else if (kind !== 'turn.cancelled') finish(new Error(`a cancelled turn ended with ${kind}`))
        else finish(Number(at - t0) / NS_PER_MS)
      }
    }
    ws.on('message', onMessage)
    ws.send(JSON.stringify({ type: 'turn.start', message: `${HOLD_PREFIX}${key}`, interactive: false, ref }))
  })
}

async function main (): Promise<void> {
  let ws: WebSocket | undefined
  serveCommands({
    run: async (m) => {
      if (ws === undefined) {
        const opened = await openSockets(`${String(m.url).replace(/^http/, 'ws')}/v1/ws`, 1, 1)
        ws = opened.sockets[0]
        if (ws === undefined) throw new Error(`cannot open a WebSocket: ${opened.firstError ?? 'unknown'}`)
      }
      const deadline = Date.now() + Number(m.deadlineMs)
      const latencies: number[] = []
      for (let i = 0; i < Number(m.samples) && Date.now() < deadline; i++) latencies.push(await sample(ws, `${String(m.prefix)}-${i}`))
      return { latencies }
    },
    close: async () => {
      if (ws !== undefined) await closeSockets([ws])
      return {}
    }
  })
  announceReady()
}

void main()
