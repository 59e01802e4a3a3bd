/**
 * Starts the real gateway on 127.0.0.1 port 0 with a scratch workspace, pointed at a fake
 * provider, and gives tests small HTTP and WebSocket clients that speak to it over the network.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { WebSocket } from 'ws'
import { LOCAL_PRINCIPAL } from '../../src/auth/principal.js'
import { deepMerge, loadConfig } from '../../src/core/config.js'
import { buildServer, type BuildOptions, type Gateway } from '../../src/app/server.js'
import type { EventEnvelope, TurnEvent } from '../../schemas/events.js'
import { startFakeProvider, type FakeProvider } from './fake-provider.js'
import { eventShape } from './shape.js'

export interface TestGateway {
  gateway: Gateway
  provider: FakeProvider
  url: string
  wsUrl: string
  /** The configured workspace root (each tenant works in its own folder below it). */
  workspaceRoot: string
  /** The folder the tools of the `local` principal (auth.mode "none") act in. */
  workspace: string
  /** The folder the tools of `tenant`'s principals act in (created; without per-session folders). */
  tenantWorkspace (tenant: string): string
  http (
    method: string, path: string, body?: unknown, headers?: Record<string, string>
  ): Promise<{ status: number, body: any, headers: Headers }>
  socket (options?: { protocols?: string[], headers?: Record<string, string>, query?: string }): Promise<TestSocket>
  close (): Promise<void>
}

export interface StartOptions extends Omit<BuildOptions, 'config'> {
  overrides?: unknown
  /** Provide a provider shared by several gateways; otherwise one is started. */
  provider?: FakeProvider
  /**
   * Bearer token sent by default (`Authorization` on http(), `bearer.` subprotocol on socket())
   * unless a call gives its own; for gateways started with `auth.mode = "jwt"`.
   */
  token?: string
}

/** One HTTP request to a gateway; the body is parsed as JSON when it is JSON. */
export async function requestJson (
  baseUrl: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}
): Promise<{ status: number, body: any, headers: Headers }> {
  const init: RequestInit = { method, headers: { ...headers } }
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body)
    ;(init.headers as Record<string, string>)['content-type'] ??= 'application/json'
  }
  const res = await fetch(`${baseUrl}${path}`, init)
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = text === '' ? null : JSON.parse(text)
  } catch {}
  return { status: res.status, body: parsed, headers: res.headers }
}

export async function startGateway (options: StartOptions = {}): Promise<TestGateway> {
  const provider = options.provider ?? await startFakeProvider()
  const workspaceRoot = await mkdtemp(join(tmpdir(), 'tollgate-test-'))
  const config = loadConfig({
    env: {},
    overrides: deepMerge({
      server: { host: '127.0.0.1', port: 0 },
      log: { level: 'silent' },
      workspace: { dir: workspaceRoot },
      tools: { shell: { process_ledger_dir: join(workspaceRoot, '.tool-processes') } },
      ws: { heartbeat_ms: 0 },
      // Tests never write ./data; a test opts into a durable store through `overrides`.
      store: { kind: 'memory' },
      // No retries unless a test asks: a scripted failure reaches the turn as scripted, once.
      providers: { fake: { kind: 'openai', base_url: provider.baseUrl, model: 'fake-model', timeout_ms: 5000, max_retries: 0 } },
      agents: { default: { provider: 'fake' } }
    }, options.overrides ?? {})
  })
  const { overrides: _o, provider: _p, token, ...build } = options
  const gateway = await buildServer({ ...build, config })
  const address = await gateway.app.listen({ host: '127.0.0.1', port: 0 })
  const url = address
  const wsUrl = `${address.replace(/^http/, 'ws')}/v1/ws`
  const sockets: TestSocket[] = []
  return {
    gateway,
    provider,
    url,
    wsUrl,
    workspaceRoot,
    workspace: gateway.workspaces.tenantDir(LOCAL_PRINCIPAL.tenant),
    tenantWorkspace: (tenant) => gateway.workspaces.tenantDir(tenant),
    async http (method, path, body, headers = {}) {
      const auth: Record<string, string> = token === undefined || 'authorization' in headers ? {} : { authorization: `Bearer ${token}` }
      return await requestJson(url, method, path, body, { ...auth, ...headers })
    },
    async socket (socketOptions = {}) {
      const protocols = socketOptions.protocols ?? (token === undefined ? ['tollgate.v1'] : ['tollgate.v1', `bearer.${token}`])
      const s = await TestSocket.open(`${wsUrl}${socketOptions.query ?? ''}`, protocols, socketOptions.headers ?? {})
      sockets.push(s)
      return s
    },
    async close () {
      for (const s of sockets) s.close()
      // A close that hangs fails here, by name, instead of as a whole test file's timeout.
      await boundedClose(gateway)
      if (options.provider === undefined) await provider.close()
      await rm(workspaceRoot, { recursive: true, force: true })
    }
  }
}

type Frame = Record<string, any>

const CLOSE_BOUND_MS = 30_000

async function boundedClose (gateway: Gateway): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => { reject(new Error(`gateway.close() did not finish within ${CLOSE_BOUND_MS} ms`)) }, CLOSE_BOUND_MS)
  })
  try {
    await Promise.race([gateway.close(), bound])
  } finally {
    clearTimeout(timer)
  }
}

export class TestSocket {
  readonly frames: Frame[] = []
  private cursor = 0
  private waiters: Array<() => void> = []
  closeCode: number | null = null
  closeReason = ''

  private constructor (readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      this.frames.push(JSON.parse(data.toString('utf8')) as Frame)
      this.wake()
    })
    ws.on('close', (code, reason) => {
      this.closeCode = code
      this.closeReason = reason.toString()
      this.wake()
    })
  }

  private wake (): void {
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) w()
  }

  static async open (url: string, protocols: string[], headers: Record<string, string>): Promise<TestSocket> {
    const ws = new WebSocket(url, protocols, { headers })
    const socket = new TestSocket(ws)
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('unexpected-response', (req, res) => {
        const parts: Buffer[] = []
        res.on('data', (c: Buffer) => parts.push(c))
        res.on('end', () => {
          req.destroy()
          const text = Buffer.concat(parts).toString('utf8')
          let body: unknown = text
          try {
            body = JSON.parse(text)
          } catch {}
          reject(Object.assign(new Error(`upgrade refused: ${res.statusCode ?? 0}`), { statusCode: res.statusCode, headers: res.headers, body }))
        })
      })
      ws.once('error', reject)
    })
    return socket
  }

  send (frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
  }

  /** Next frame (after the ones already consumed) matching `match`; earlier non-matching frames stay available to `all`. */
  async next (match: (f: Frame) => boolean = () => true, timeoutMs = 20_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      for (let i = this.cursor; i < this.frames.length; i++) {
        const f = this.frames[i] as Frame
        if (match(f)) {
          this.cursor = i + 1
          return f
        }
      }
      if (this.closeCode !== null) throw new Error(`socket closed (${this.closeCode} ${this.closeReason}) while waiting; frames: ${JSON.stringify(this.frames.slice(-5))}`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`timed out waiting for a frame; last frames: ${JSON.stringify(this.frames.slice(-5))}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.waiters.push(() => { clearTimeout(timer); resolve() })
      })
    }
  }

  /** Sends a frame with a fresh ref and waits for the direct answer (or error) carrying it. */
  async request (frame: Frame, timeoutMs = 20_000): Promise<Frame> {
    const ref = `r${Math.random().toString(36).slice(2, 10)}`
    this.send({ ...frame, ref })
    return await this.next((f) => f.ref === ref && f.type !== 'event', timeoutMs)
  }

  /** Events of one turn received so far, in arrival order. */
  events (turnId: string): EventEnvelope[] {
    return this.frames.filter((f) => f.type === 'event' && f.turn_id === turnId) as EventEnvelope[]
  }

  async waitForEvent (turnId: string, match: (e: TurnEvent) => boolean, timeoutMs = 20_000): Promise<EventEnvelope> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = this.events(turnId).find((e) => match(e.event))
      if (found !== undefined) return found
      if (this.closeCode !== null) throw new Error(`socket closed (${this.closeCode}) while waiting for an event`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`timed out waiting for an event of ${turnId}; got: ${JSON.stringify(this.events(turnId).map((e) => e.event.kind))}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.waiters.push(() => { clearTimeout(timer); resolve() })
      })
    }
  }

  /** Waits for the turn's first approval request and answers it over this socket; returns the ack. */
  async answerApproval (turnId: string, decision: 'yes' | 'no' | 'always' | 'edit', replacement?: string): Promise<Frame> {
    const requested = await this.waitForEvent(turnId, (e) => e.kind === 'approval.requested')
    return await this.request({ type: 'approval.respond', request_id: requestIdOf(requested), decision, ...(replacement === undefined ? {} : { replacement }) })
  }

  async waitForTerminal (turnId: string, timeoutMs = 20_000): Promise<EventEnvelope[]> {
    await this.waitForEvent(turnId, (e) => e.kind === 'turn.completed' || e.kind === 'turn.cancelled' || e.kind === 'turn.failed', timeoutMs)
    return this.events(turnId)
  }

  async closed (timeoutMs = 20_000): Promise<number> {
    const deadline = Date.now() + timeoutMs
    while (this.closeCode === null) {
      const left = deadline - Date.now()
      if (left <= 0) throw new Error('socket did not close')
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.waiters.push(() => { clearTimeout(timer); resolve() })
      })
    }
    return this.closeCode
  }

  close (): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close()
  }
}

/** Compact view of an event sequence for exact assertions (see eventShape). */
export function shape (events: readonly EventEnvelope[]): string[] {
  return eventShape(events.map((e) => e.event))
}

export function assertSeqContiguous (events: readonly EventEnvelope[]): void {
  events.forEach((e, i) => {
    if (e.seq !== i + 1) throw new Error(`seq ${e.seq} at position ${i}: expected ${i + 1}`)
  })
}

/** The request id of an `approval.requested` event (throws for any other event). */
export function requestIdOf (e: EventEnvelope): string {
  if (e.event.kind !== 'approval.requested') throw new Error(`expected approval.requested, got ${e.event.kind}`)
  return e.event.request_id
}
