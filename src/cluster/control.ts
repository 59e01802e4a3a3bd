/**
 * Request/reply over the bus's control plane, for work that only the instance running a turn
 * can do (cancel it, settle its approval, say whether someone watches it). A request goes to
 * every instance; each answers `handled` or "not mine", so the asker can stop as soon as one
 * handled it or every live peer declined, and otherwise gives up after `timeoutMs`.
 */
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { ControlMessage, ControlReply, ControlRequest, ControlPlane, Unsubscribe } from '../bus/bus.js'
import { isErrorCode, TollgateError, type ErrorCode } from '../core/errors.js'

export type ReplyBody = Pick<ControlReply, 'error' | 'turn_id' | 'status' | 'steered'>

/** The refusals an instance answers a control request with; their text comes from the catalogue. */
const REMOTE_ERROR_CODES: ReadonlySet<ErrorCode> = new Set(['APPROVAL_NOT_FOUND', 'APPROVAL_ALREADY_RESOLVED', 'APPROVAL_EXPIRED', 'APPROVAL_CANCELLED',
  'INVALID_DECISION', 'TURN_NOT_FOUND', 'STEERING_CLOSED', 'STEERING_QUEUE_FULL', 'SHUTTING_DOWN'])

/** The typed error another instance answered with; any other code is its internal failure. */
export function remoteError (code: string): TollgateError {
  if (isErrorCode(code) && REMOTE_ERROR_CODES.has(code)) return new TollgateError(code)
  return new TollgateError('INTERNAL', 'the instance running this turn could not apply the request')
}

/** What an instance answers for a request it received: a body if it handled it, else null. */
export type ControlHandler = (request: ControlRequest) => Promise<ReplyBody | null>

export interface ControlRpcOptions {
  bus: ControlPlane
  instanceId: string
  /** Live instances (this one included); null when unknown, which makes askers wait the full timeout. */
  peers: () => Promise<string[] | null>
  timeoutMs: number
  log: Logger
}

interface Pending {
  expected: number
  declined: number
  settle: (body: ReplyBody | null) => void
}

export class ControlRpc {
  private readonly options: ControlRpcOptions
  private readonly pending = new Map<string, Pending>()
  private handler: ControlHandler | null = null
  private readonly stop: Unsubscribe

  constructor (options: ControlRpcOptions) {
    this.options = options
    this.stop = options.bus.onControl((message) => { this.receive(message) })
  }

  serve (handler: ControlHandler): void {
    this.handler = handler
  }

  /**
   * Asks the other instances. Answers the handling instance's body, or null when none handled
   * it (nobody else alive, all declined, or no answer in time). Never throws.
   */
  async request (request: ControlRequest, timeoutMs = this.options.timeoutMs): Promise<ReplyBody | null> {
    if (!this.options.bus.shared) return null
    const peers = await this.options.peers().catch(() => null)
    const expected = peers === null ? Infinity : peers.filter((p) => p !== this.options.instanceId).length
    if (expected === 0) return null
    const id = randomUUID()
    return await new Promise<ReplyBody | null>((resolve) => {
      const timer = setTimeout(() => { settle(null) }, timeoutMs)
      timer.unref()
      const settle = (body: ReplyBody | null): void => {
        clearTimeout(timer)
        this.pending.delete(id)
        resolve(body)
      }
      this.pending.set(id, { expected, declined: 0, settle })
      this.options.bus.publishControl({ ...request, rpc: { id, from: this.options.instanceId } })
    })
  }

  private receive (message: ControlMessage): void {
    if (message.type === 'reply') {
      if (message.to !== this.options.instanceId) return
      const p = this.pending.get(message.id)
      if (p === undefined) return
      if (message.handled) {
        const body: ReplyBody = {}
        if (message.error !== undefined) body.error = message.error
        if (message.turn_id !== undefined) body.turn_id = message.turn_id
        if (message.status !== undefined) body.status = message.status
        if (message.steered !== undefined) body.steered = message.steered
        p.settle(body)
        return
      }
      p.declined += 1
      if (p.declined >= p.expected) p.settle(null)
      return
    }
    const { rpc, ...request } = message
    if (rpc?.from === this.options.instanceId) return
    const handler = this.handler
    if (handler === null) return
    handler(request)
      .catch((err: unknown) => {
        this.options.log.error({ err, type: request.type }, 'control request failed')
        return null
      })
      .then((body) => {
        if (rpc === undefined) return
        this.options.bus.publishControl({ type: 'reply', id: rpc.id, to: rpc.from, from: this.options.instanceId, handled: body !== null, ...(body ?? {}) })
      })
      .catch(() => {})
  }

  close (): void {
    this.stop()
    for (const p of [...this.pending.values()]) p.settle(null)
  }
}
