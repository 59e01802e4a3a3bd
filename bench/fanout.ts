/**
 * Fan-out subscriber process: holds its share of the subscriber sockets, subscribes all of them to
 * one turn, and stamps every event frame of that turn on arrival (shared monotonic clock, before
 * parsing), so the orchestrator can subtract the gateway's emit time of the same seq.
 */
import type { WebSocket } from 'ws'
import { announceReady, monotonicNs, serveCommands } from './ipc.js'
import { closeSockets, openSockets } from './ws-clients.js'

const TERMINAL = new Set(['turn.completed', 'turn.failed', 'turn.cancelled'])

interface Receipts {
  seqs: number[]
  ns: bigint[]
  terminal: boolean
}

interface Subscriber {
  ws: WebSocket
  turns: Map<string, Receipts>
  acks: Map<string, (frame: { type?: string, message?: string }) => void>
}

function attach (ws: WebSocket): Subscriber {
  const sub: Subscriber = { ws, turns: new Map(), acks: new Map() }
  ws.on('message', (data: Buffer) => {
    const at = monotonicNs()
    const frame = JSON.parse(data.toString('utf8')) as { type?: string, ref?: string, turn_id?: string, seq?: number, event?: { kind?: string }, message?: string }
    if (frame.type === 'event' && frame.turn_id !== undefined) {
      const r = sub.turns.get(frame.turn_id)
      if (r === undefined) return
      r.seqs.push(frame.seq ?? 0)
      r.ns.push(at)
      if (TERMINAL.has(frame.event?.kind ?? '')) r.terminal = true
      return
    }
    if (frame.ref !== undefined) {
      sub.acks.get(frame.ref)?.(frame)
      sub.acks.delete(frame.ref)
    }
  })
  return sub
}

async function waitUntil (check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

async function main (): Promise<void> {
  let subscribers: Subscriber[] = []
  serveCommands({
    open: async (m) => {
      const result = await openSockets(String(m.url), Number(m.count), Number(m.inFlight))
      subscribers = result.sockets.map(attach)
      return { opened: subscribers.length, failed: result.failed, firstError: result.firstError }
    },
    subscribe: async (m) => {
      const turnId = String(m.turnId)
      let acked = 0
      let refused: string | null = null
      subscribers.forEach((sub, i) => {
        const ref = `s${i}`
        sub.turns.set(turnId, { seqs: [], ns: [], terminal: false })
        sub.acks.set(ref, (frame) => {
          acked++
          if (frame.type !== 'subscribed') refused ??= `${String(frame.type)}: ${String(frame.message)}`
        })
        sub.ws.send(JSON.stringify({ type: 'subscribe', turn_id: turnId, ref }))
      })
      await waitUntil(() => acked === subscribers.length, Number(m.timeoutMs), `${subscribers.length - acked} subscribe answers`)
      if (refused !== null) throw new Error(`a subscribe was refused: ${refused as string}`)
      return { subscribed: acked }
    },
    collect: async (m) => {
      const turnId = String(m.turnId)
      const all = subscribers.map((s) => s.turns.get(turnId))
      await waitUntil(() => all.every((r) => r?.terminal === true), Number(m.timeoutMs), 'every subscriber to see the terminal event')
      const seqs: number[] = []
      const ns: string[] = []
      for (const [i, r] of all.entries()) {
        if (r === undefined) continue
        seqs.push(...r.seqs)
        ns.push(...r.ns.map(String))
        subscribers[i]?.turns.delete(turnId)
      }
      return { seqs, ns }
    },
    close: async () => {
      await closeSockets(subscribers.map((s) => s.ws))
      subscribers = []
      return {}
    }
  })
  announceReady()
}

void main()
