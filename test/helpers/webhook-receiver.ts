/**
 * A webhook receiver on loopback, as a notification consumer would run one: every POST is verified
 * with the `standardwebhooks` library (a message that does not verify is answered 400 and kept
 * apart), and answered with the status `respond` chooses — 500 first, say, to see a retry.
 */
import { createServer, type IncomingMessage } from 'node:http'
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'

export interface ReceivedMessage {
  webhookId: string
  timestamp: string
  type: string
  payload: { type: string, timestamp: string, data: Record<string, any> }
  /** 1 for the first arrival of this webhook-id, 2 for its first retry, ... */
  arrival: number
  /** The status the receiver answered. */
  status: number
}

export interface WebhookReceiver {
  url: string
  secret: string
  /** Every verified POST, in arrival order (retries included). */
  received: ReceivedMessage[]
  /** POSTs whose signature did not verify. */
  rejected: number
  /** Chooses the answer to a verified message (default 204). */
  respond: (message: Omit<ReceivedMessage, 'status'>) => number
  ofType (type: string): ReceivedMessage[]
  close (): Promise<void>
}

/** A fresh Standard Webhooks secret: whsec_ and base64 of 32 random bytes. */
export function newSecret (): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

async function bodyOf (req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

export async function startWebhookReceiver (secret = newSecret()): Promise<WebhookReceiver> {
  const verifier = new Webhook(secret)
  const arrivals = new Map<string, number>()
  const receiver: WebhookReceiver = {
    url: '',
    secret,
    received: [],
    rejected: 0,
    respond: () => 204,
    ofType: (type) => receiver.received.filter((m) => m.type === type),
    close: async () => {}
  }
  const server = createServer((req, res) => {
    void bodyOf(req).then((body) => {
      const headers = {
        'webhook-id': String(req.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(req.headers['webhook-signature'] ?? '')
      }
      let payload: ReceivedMessage['payload']
      try {
        payload = verifier.verify(body, headers) as ReceivedMessage['payload']
      } catch {
        receiver.rejected += 1
        res.writeHead(400).end()
        return
      }
      const arrival = (arrivals.get(headers['webhook-id']) ?? 0) + 1
      arrivals.set(headers['webhook-id'], arrival)
      const message = { webhookId: headers['webhook-id'], timestamp: headers['webhook-timestamp'], type: payload.type, payload, arrival }
      const status = receiver.respond(message)
      receiver.received.push({ ...message, status })
      res.writeHead(status).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  receiver.close = async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => { resolve() }))
  }
  return receiver
}
