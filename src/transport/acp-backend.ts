/**
 * The ACP agent's backend inside the gateway (`/v1/acp`): the turn service called directly for
 * the socket's principal, its turns owned by the socket's connection (closing it cancels them,
 * and approvals can be answered through it), events followed on the bus from each turn's start.
 */
import type { EventEnvelope } from '../../schemas/events.js'
import type { HistoryMessage } from '../../schemas/session.js'
import type { Gateway } from '../app/gateway.js'
import { principalKey, requireScope, type Principal } from '../auth/principal.js'
import type { Unsubscribe } from '../bus/bus.js'
import { wireEnvelope } from '../core/envelope.js'
import { TollgateError } from '../core/errors.js'
import { scrubText } from '../core/security/redact.js'
import type { Connection } from '../service/connections.js'
import type { AcpBackend } from '../acp/backend.js'
import { followFromStart } from './follow.js'

/** One turn's events as they are published, for one reader, ending after the terminal event. */
class EventQueue implements AsyncIterable<EventEnvelope> {
  private readonly events: EventEnvelope[] = []
  private ended = false
  private wake: (() => void) | null = null
  unsubscribe: Unsubscribe = () => {}

  push (envelope: EventEnvelope): void {
    this.events.push(envelope)
    this.wake?.()
  }

  end (): void {
    this.ended = true
    this.unsubscribe()
    this.wake?.()
  }

  async * [Symbol.asyncIterator] (): AsyncIterator<EventEnvelope> {
    for (;;) {
      const next = this.events.shift()
      if (next !== undefined) {
        yield next
        continue
      }
      if (this.ended) return
      await new Promise<void>((resolve) => { this.wake = resolve })
      this.wake = null
    }
  }
}

/** As `GET /v1/sessions/:id` shows it: without system messages, every text scrubbed. */
function shownHistory (history: ReadonlyArray<HistoryMessage | { role: 'system' }>): HistoryMessage[] {
  const out: HistoryMessage[] = []
  for (const m of history) {
    if (m.role === 'system') continue
    const shown: HistoryMessage = { ...m, content: m.content === null ? null : scrubText(m.content) }
    if (m.tool_calls !== undefined) shown.tool_calls = m.tool_calls.map((c) => ({ ...c, arguments: scrubText(c.arguments) }))
    out.push(shown)
  }
  return out
}

export function gatewayBackend (gateway: Gateway, principal: Principal, connection: Connection): AcpBackend & { close: () => void } {
  const following = new Map<string, EventQueue>()
  // The turn service asks the owner connection to follow a new turn before its first event.
  connection.follow = (turnId) => {
    const queue = new EventQueue()
    following.set(turnId, queue)
    connection.turns.add(turnId)
    queue.unsubscribe = followFromStart({
      bus: gateway.bus,
      turnId,
      deliver: (e) => { queue.push(wireEnvelope(e)) },
      onEnd: () => {
        queueMicrotask(() => {
          queue.end()
          following.delete(turnId)
          connection.turns.delete(turnId)
        })
      }
    })
  }
  return {
    startTurn: async ({ message, sessionId, agent }) => {
      const { turn } = await gateway.turns.start(principal, {
        message, session_id: sessionId, owner_connection: connection.id, ...(agent === undefined ? {} : { agent })
      }, { ownerConnection: connection.id, channel: 'acp' })
      const events = following.get(turn.turn_id)
      if (events === undefined) throw new TollgateError('INTERNAL', 'the new turn is not followed')
      return { turnId: turn.turn_id, events }
    },
    answer: async (requestId, answer) => {
      requireScope(principal, 'approvals:answer')
      await gateway.turns.answerApproval(principal, requestId, { ...answer, decidedBy: `acp:${principalKey(principal)}`, channel: 'acp' })
    },
    cancel: async (turnId) => { await gateway.turns.cancel(principal, turnId, 'cancelled by client') },
    released: async (turnId) => { await gateway.turns.waitFor(principal, turnId) },
    steer: async (turnId, message) => { await gateway.turns.steer(principal, turnId, message) },
    history: async (sessionId) => {
      try {
        return shownHistory((await gateway.turns.session(principal, sessionId)).history as HistoryMessage[])
      } catch (err) {
        if (err instanceof TollgateError && err.code === 'SESSION_NOT_FOUND') return null
        throw err
      }
    },
    close: () => {
      for (const queue of following.values()) queue.end()
      following.clear()
    }
  }
}
