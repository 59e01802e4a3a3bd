/**
 * Opening many Tollgate WebSockets from one client process: each socket offers `tollgate.v1`,
 * says hello and counts as open once the gateway has welcomed it. Opens are bounded in flight so
 * the listen backlog never overflows (a dropped SYN costs a one-second retransmit).
 */
import { WebSocket } from 'ws'

export interface OpenResult {
  sockets: WebSocket[]
  failed: number
  firstError: string | null
}

function openOne (url: string, timeoutMs: number): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, ['tollgate.v1'], { perMessageDeflate: false })
    const timer = setTimeout(() => {
      ws.terminate()
      reject(new Error('no welcome in time'))
    }, timeoutMs)
    const fail = (err: Error): void => {
      clearTimeout(timer)
      reject(err)
    }
    ws.once('error', fail)
    ws.once('unexpected-response', (_req, res) => { fail(new Error(`upgrade refused: HTTP ${res.statusCode ?? 0}`)) })
    ws.once('open', () => { ws.send(JSON.stringify({ type: 'hello' })) })
    ws.once('message', (data: Buffer) => {
      clearTimeout(timer)
      const frame = JSON.parse(data.toString('utf8')) as { type?: string }
      if (frame.type !== 'welcome') {
        ws.terminate()
        reject(new Error(`expected welcome, got ${String(frame.type)}`))
        return
      }
      ws.off('error', fail)
      // Errors after the handshake surface as a close; the holder counts open sockets.
      ws.on('error', () => {})
      resolve(ws)
    })
  })
}

export async function openSockets (url: string, count: number, inFlight: number, timeoutMs = 30_000): Promise<OpenResult> {
  const sockets: WebSocket[] = []
  let failed = 0
  let firstError: string | null = null
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < count) {
      next++
      try {
        sockets.push(await openOne(url, timeoutMs))
      } catch (err) {
        failed++
        firstError ??= (err as Error).message
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane))
  return { sockets, failed, firstError }
}

export async function closeSockets (sockets: readonly WebSocket[]): Promise<void> {
  await Promise.all(sockets.map(async (ws) => {
    if (ws.readyState === WebSocket.CLOSED) return
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => { ws.terminate(); resolve() }, 5000)
      ws.once('close', () => { clearTimeout(timer); resolve() })
      ws.close(1000)
    })
  }))
}
