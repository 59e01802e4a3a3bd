/**
 * A TCP relay in front of a real server that holds back what some clients send: the connections
 * whose bytes have named themselves (a Redis `CLIENT SETNAME`, say) reach the server `delayMs`
 * late, in order; the others pass at once, and answers are never held. A network boundary made
 * slow for one connection, to show what a gateway does while a command of that connection is
 * still on its way.
 */
import { createServer, connect, type AddressInfo, type Socket } from 'node:net'

export interface SlowLink {
  /** `redis://127.0.0.1:<port>` style: the target's URL with the relay's port. */
  url: string
  close (): Promise<void>
}

export async function startSlowLink (options: { target: string, delayMs: number, slowWhenSent: string }): Promise<SlowLink> {
  const target = new URL(options.target)
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname)
    sockets.add(client)
    sockets.add(upstream)
    let slow = false
    // From the chunk that names the connection on, each chunk is due `delayMs` after it came (a
    // link's latency, not a queue's), and none overtakes an earlier one.
    let last = Promise.resolve()
    client.on('data', (chunk: Buffer) => {
      if (!slow && chunk.includes(options.slowWhenSent)) slow = true
      const due = slow ? Date.now() + options.delayMs : 0
      last = last.then(async () => {
        const wait = due - Date.now()
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
        if (!upstream.destroyed) upstream.write(chunk)
      })
    })
    upstream.on('data', (chunk: Buffer) => { client.write(chunk) })
    const end = (): void => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('close', end)
    upstream.on('close', end)
    client.on('error', end)
    upstream.on('error', end)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const url = new URL(options.target)
  url.port = String(port)
  url.hostname = '127.0.0.1'
  return {
    url: url.toString().replace(/\/$/, ''),
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  }
}
