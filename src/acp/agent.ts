/**
 * Tollgate as an Agent Client Protocol (v1) agent: each `session/prompt` runs as a Tollgate turn in
 * the session of the same id, its events stream back as `session/update`s (translate.ts), its
 * approval requests become `session/request_permission` (the first answer wins: the editor's, or
 * the team's inbox over Tollgate's own API), `session/cancel` cancels the turn, `session/load`
 * replays the session's history. One agent app per connection: its sessions live in the closure.
 */
import { randomUUID } from 'node:crypto'
import {
  agent, PROTOCOL_VERSION, RequestError,
  type AgentApp, type AgentContext, type ContentBlock, type PermissionOption, type PromptResponse, type SessionUpdate, type StopReason
} from '@agentclientprotocol/sdk'
import { MAX_REPLACEMENT_CHARS } from '../../schemas/approval.js'
import type { TurnEvent } from '../../schemas/events.js'
import type { AcpAnswer, AcpBackend } from './backend.js'
import { historyUpdates, UpdateTranslator } from './translate.js'
import { toolKind, toolTitle } from './tool-kind.js'

export interface AcpAgentOptions {
  /** The Tollgate agent every session runs (the gateway's default when absent). */
  agent?: string
  version: string
  /** Where the agent notes what it could not do for the client (stderr for the stdio command). */
  warn: (message: string) => void
}

/** The permission options of every approval request, and the Tollgate decision each stands for. */
const OPTIONS: ReadonlyArray<PermissionOption & { decision: AcpAnswer['decision'] }> = [
  { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once', decision: 'yes' },
  { optionId: 'allow_always', name: 'Allow for this session', kind: 'allow_always', decision: 'always' },
  { optionId: 'reject_once', name: 'Reject', kind: 'reject_once', decision: 'no' }
]

/**
 * Tollgate's `edit` answer, offered only to a client that opted in (`_meta.tollgate.edit`): ACP
 * has no such kind, and the call does not run, so it is a `reject_once` an ordinary client would
 * show as one more way to say no. The text comes back in the selected outcome's `_meta.tollgate.replacement`.
 */
const EDIT_OPTION: PermissionOption & { decision: 'edit' } = {
  optionId: 'edit', name: 'Answer instead (your text is the result)', kind: 'reject_once', decision: 'edit', _meta: { tollgate: { decision: 'edit' } }
}

/** `_meta.tollgate` of `initialize`: what a client opts into. */
interface TollgateMeta { steering?: boolean, edit?: boolean }

/** The replacement text an edit carries, or null when it has none a request may take. */
function replacementOf (meta: Record<string, unknown> | null | undefined): string | null {
  const tollgate = meta?.tollgate
  const text = typeof tollgate === 'object' && tollgate !== null ? (tollgate as { replacement?: unknown }).replacement : undefined
  return typeof text === 'string' && text.length <= MAX_REPLACEMENT_CHARS ? text : null
}

interface RunningPrompt {
  /** Null while the turn is being started. */
  turnId: string | null
  cancelled: boolean
  /** Permission questions still open, by approval request id. */
  asks: Map<string, AbortController>
  done: Promise<PromptResponse>
}

interface AcpSession {
  id: string
  running: RunningPrompt | null
}

/** The prompt's content as one message: text as written, resources by reference or with their text. */
export function promptText (blocks: readonly ContentBlock[]): string {
  const parts: string[] = []
  for (const block of blocks) {
    if (block.type === 'text') parts.push(block.text)
    else if (block.type === 'resource_link') parts.push(`[${block.title ?? block.name}](${block.uri})`)
    else if (block.type === 'resource' && 'text' in block.resource) parts.push(`<resource uri="${block.resource.uri}">\n${block.resource.text}\n</resource>`)
    else throw RequestError.invalidParams({ type: block.type }, `Tollgate takes text and resources, not ${block.type} content`)
  }
  const text = parts.join('\n\n')
  if (text.trim() === '') throw RequestError.invalidParams(undefined, 'the prompt is empty')
  return text
}

function stopReasonOf (event: TurnEvent): StopReason | RequestError {
  if (event.kind === 'turn.completed') return 'end_turn'
  if (event.kind === 'turn.cancelled') return 'cancelled'
  if (event.kind === 'turn.failed') {
    if (event.code === 'MAX_ITERATIONS') return 'max_turn_requests'
    return RequestError.internalError({ code: event.code }, `${event.code}: ${event.message}`)
  }
  return RequestError.internalError(undefined, 'the turn ended without a terminal event')
}

/** A backend refusal as a JSON-RPC error the client can show, its Tollgate code kept in `data`. */
function asRequestError (err: unknown): RequestError {
  if (err instanceof RequestError) return err
  const code = (err as { code?: unknown }).code
  return RequestError.internalError(typeof code === 'string' ? { code } : undefined, (err as Error).message)
}

export function createAcpAgent (backend: AcpBackend, options: AcpAgentOptions): AgentApp {
  const sessions = new Map<string, AcpSession>()
  let steering = false
  let edit = false

  function sessionOf (id: string): AcpSession {
    const session = sessions.get(id)
    if (session === undefined) throw RequestError.sessionNotFound(id)
    return session
  }

  async function notify (client: AgentContext, sessionId: string, updates: readonly SessionUpdate[]): Promise<void> {
    for (const update of updates) await client.notify('session/update', { sessionId, update })
  }

  /** Asks the editor's user; an answer given elsewhere first (the inbox, REST) withdraws the question. */
  function ask (client: AgentContext, session: AcpSession, running: RunningPrompt, event: Extract<TurnEvent, { kind: 'approval.requested' }>): void {
    const withdraw = new AbortController()
    running.asks.set(event.request_id, withdraw)
    // A budget question has no result to replace: yes or no only.
    const offered = edit && event.approval_kind === undefined ? [...OPTIONS, EDIT_OPTION] : OPTIONS
    client.request('session/request_permission', {
      sessionId: session.id,
      toolCall: {
        toolCallId: event.call_id, title: toolTitle(event.name, event.arguments), kind: toolKind(event.name), status: 'pending',
        rawInput: event.arguments, content: [{ type: 'content', content: { type: 'text', text: `${event.reason}\n${event.summary}` } }]
      },
      options: offered.map(({ decision: _d, ...option }) => option)
    }, { cancellationSignal: withdraw.signal, stopWaitingOnCancel: true }).then(async (response) => {
      running.asks.delete(event.request_id)
      if (response.outcome.outcome !== 'selected') return
      const { optionId } = response.outcome
      const decision = offered.find((o) => o.optionId === optionId)?.decision
      if (decision === undefined) {
        options.warn(`unknown permission option ${JSON.stringify(optionId)}: the request waits for another answer`)
        return
      }
      if (decision !== 'edit') {
        await backend.answer(event.request_id, { decision })
        return
      }
      const replacement = replacementOf(response.outcome._meta)
      if (replacement === null) {
        options.warn(`the edit answer to ${event.request_id} has no _meta.tollgate.replacement text (at most ${MAX_REPLACEMENT_CHARS} characters): the request waits for another answer`)
        return
      }
      await backend.answer(event.request_id, { decision, replacement })
    }).catch((err: unknown) => {
      running.asks.delete(event.request_id)
      // Withdrawn, or answered elsewhere first: nothing to do.
      if (!withdraw.signal.aborted) options.warn(`could not answer approval ${event.request_id}: ${(err as Error).message}`)
    })
  }

  function withdrawAll (running: RunningPrompt): void {
    for (const withdraw of running.asks.values()) withdraw.abort()
    running.asks.clear()
  }

  /** Runs one prompt as a turn; `session.running` is set before anything is awaited (a second prompt sees it). */
  async function runPrompt (client: AgentContext, session: AcpSession, message: string): Promise<PromptResponse> {
    let settle!: (response: PromptResponse) => void
    const running: RunningPrompt = {
      turnId: null, cancelled: false, asks: new Map(), done: new Promise((resolve) => { settle = resolve })
    }
    session.running = running
    let ending: StopReason | RequestError = RequestError.internalError(undefined, 'the turn\'s event stream ended early')
    try {
      const agentName = options.agent === undefined ? {} : { agent: options.agent }
      const turn = await backend.startTurn({ message, sessionId: session.id, ...agentName })
      running.turnId = turn.turnId
      // Cancelled while the turn was being started.
      if (running.cancelled) cancelTurn(running)
      const translator = new UpdateTranslator()
      for await (const { event } of turn.events) {
        await notify(client, session.id, translator.updates(event))
        if (event.kind === 'approval.requested') ask(client, session, running, event)
        else if (event.kind === 'approval.resolved') running.asks.get(event.request_id)?.abort()
        else if (event.kind === 'turn.completed' || event.kind === 'turn.cancelled' || event.kind === 'turn.failed') {
          ending = stopReasonOf(event)
          break
        }
      }
      // The prompt answers once the session takes its next turn (an editor sends it right away).
      await backend.released(turn.turnId)
    } catch (err) {
      ending = asRequestError(err)
    } finally {
      withdrawAll(running)
      session.running = null
    }
    // A cancelled prompt answers `cancelled` whatever else happened, as the protocol asks.
    if (running.cancelled) ending = 'cancelled'
    const response: PromptResponse = typeof ending === 'string' ? { stopReason: ending } : { stopReason: 'end_turn' }
    settle(response)
    if (typeof ending !== 'string') throw ending
    return response
  }

  function cancelTurn (running: RunningPrompt): void {
    const turnId = running.turnId
    if (turnId === null) return
    backend.cancel(turnId).catch((err: unknown) => { options.warn(`could not cancel turn ${turnId}: ${(err as Error).message}`) })
  }

  return agent({ name: 'tollgate' })
    .onRequest('initialize', ({ params }) => {
      const meta = (params._meta?.tollgate ?? {}) as TollgateMeta
      steering = meta.steering === true
      edit = meta.edit === true
      return {
        protocolVersion: PROTOCOL_VERSION,
        agentCapabilities: { loadSession: true, promptCapabilities: { embeddedContext: true } },
        agentInfo: { name: 'tollgate', title: 'Tollgate', version: options.version },
        authMethods: [],
        _meta: { tollgate: { steering, edit } }
      }
    })
    .onRequest('session/new', ({ params }) => {
      // Tollgate's tools run in the gateway's sandbox with its own MCP servers; the editor's are not reachable from there.
      if (params.mcpServers.length > 0) options.warn(`ignored ${params.mcpServers.length} MCP server(s) of the client: tools are configured on the gateway`)
      const id = randomUUID()
      sessions.set(id, { id, running: null })
      return { sessionId: id }
    })
    .onRequest('session/load', async ({ params, client }) => {
      const history = await backend.history(params.sessionId).catch((err: unknown) => { throw asRequestError(err) })
      if (history === null) throw RequestError.sessionNotFound(params.sessionId)
      if (!sessions.has(params.sessionId)) sessions.set(params.sessionId, { id: params.sessionId, running: null })
      await notify(client, params.sessionId, historyUpdates(history))
      return {}
    })
    .onRequest('session/prompt', async ({ params, client }) => {
      const session = sessionOf(params.sessionId)
      const message = promptText(params.prompt)
      // A prompt while a turn runs: it steers that turn when the client opted in, else waits its turn.
      for (let running = session.running; running !== null; running = session.running) {
        if (steering && running.turnId !== null) {
          try {
            await backend.steer(running.turnId, message)
            return await running.done
          } catch (err) {
            if ((err as { code?: unknown }).code !== 'STEERING_CLOSED') throw asRequestError(err)
          }
        }
        await running.done
      }
      return await runPrompt(client, session, message)
    })
    .onNotification('session/cancel', ({ params }) => {
      const running = sessions.get(params.sessionId)?.running
      if (running == null) return
      running.cancelled = true
      withdrawAll(running)
      cancelTurn(running)
    })
}
