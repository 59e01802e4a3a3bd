/**
 * What the AG-UI and AI SDK adapters share: the request owns its turn like an SSE request of
 * POST /v1/turns (its client going away cancels the turn after the disconnect grace), streams the
 * turn's own events translated into the frontend protocol, and may stop early on an approval
 * request. Stopping there hands the turn to no owner, so it keeps waiting for the answer that a
 * later request of the same protocol brings (see `resumeTurn`). Refusals are thrown before
 * anything is written and become problem JSON; nothing is created for them.
 */
import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyReply } from 'fastify'
import type { TurnEvent } from '../../schemas/events.js'
import { MAX_MESSAGE_CHARS, type TurnRequest } from '../../schemas/turn.js'
import { hasScope, principalKey, type Principal } from '../auth/principal.js'
import type { BusEnvelope, EventBus } from '../bus/bus.js'
import type { Config } from '../core/config.js'
import { TollgateError } from '../core/errors.js'
import type { TurnJournal } from '../journal/journal.js'
import type { Connection, ConnectionRegistry } from '../service/connections.js'
import type { TurnService } from '../service/turn-service.js'
import { followTurn } from '../transport/follow.js'
import { SseWriter } from '../transport/sse-writer.js'
import type { GatewayMetrics } from '../observe/metrics.js'
import type { Logger } from 'pino'

export interface AdapterDeps {
  turns: TurnService
  connections: ConnectionRegistry
  bus: EventBus
  journal: TurnJournal
  config: Config
  metrics: GatewayMetrics | null
  log: Logger
}

/** One turn event in the frontend's protocol; `park`: end the stream here, the turn waits for an approval answer. */
export interface Translation {
  frames: string[]
  park?: boolean
}

/** Turns Tollgate's events of one turn into one protocol's SSE frames; one instance per response. */
export interface EventTranslator {
  opening (turnId: string): string[]
  translate (envelope: BusEnvelope): Translation
  /** Frames for a stream that cannot go on (its events are no longer retained). */
  failure (code: string, message: string): string[]
}

export interface AdapterStream {
  principal: Principal
  reply: FastifyReply
  /** Protocol markers beside the SSE headers (the writer sets the content type). */
  headers: OutgoingHttpHeaders
  /** Audit and observer label of the turn's front door, e.g. `ag-ui`. */
  channel: string
  translator: EventTranslator
}

/** An operator answer carried by an adapter request. */
export interface AdapterAnswer {
  requestId: string
  decision: 'yes' | 'no' | 'always' | 'edit'
  replacement?: string
  /** With `no`: the person's reason, passed on to the model. */
  reason?: string
}

/** Bounds a message the way POST /v1/turns does; an empty or oversized one is refused before anything starts. */
export function turnMessage (text: string): string {
  if (text.trim() === '') throw new TollgateError('INVALID_REQUEST', 'the last user message is empty')
  if (text.length > MAX_MESSAGE_CHARS) {
    throw new TollgateError('PAYLOAD_TOO_LARGE', `the last user message has ${text.length} characters; at most ${MAX_MESSAGE_CHARS} are accepted`)
  }
  return text
}

/** What a frontend shows the person deciding (both adapters carry it next to their own approval shape). */
export function approvalRequest (e: Extract<TurnEvent, { kind: 'approval.requested' }>): Record<string, unknown> {
  return { request_id: e.request_id, call_id: e.call_id, tool: e.name, summary: e.summary, display: e.display, expires_at: e.expires_at }
}

function openConnection (deps: AdapterDeps, stream: AdapterStream): Connection {
  const { principal, reply } = stream
  const connection = deps.connections.open('sse', principalKey(principal), hasScope(principal, 'approvals:answer'))
  // `request.signal` is already aborted on a POST with a body (fastify 5 on Node 20): a close before the end is the client going away.
  reply.raw.on('close', () => { if (!reply.raw.writableFinished) deps.connections.close(connection.id) })
  return connection
}

/** Starts a turn owned by this request and streams it. */
export async function streamNewTurn (deps: AdapterDeps, stream: AdapterStream, request: TurnRequest): Promise<void> {
  const connection = openConnection(deps, stream)
  let turnId: string
  try {
    const { turn } = await deps.turns.start(stream.principal, request, { ownerConnection: connection.id, channel: stream.channel })
    turnId = turn.turn_id
  } catch (err) {
    deps.connections.close(connection.id)
    throw err
  }
  connection.turns.add(turnId)
  await pipe(deps, stream, connection, turnId, 0)
}

export interface WaitingApprovals {
  turnId: string
  /** Seq of the last answered `approval.requested`: the resumed stream goes on after it. */
  afterSeq: number
  /** Tool calls already announced to the client with their approval request. */
  callIds: string[]
}

/**
 * Finds the approval requests `requestIds` in the latest turn of the principal's session. Another
 * principal's session answers like a missing one; an id that turn never asked is APPROVAL_NOT_FOUND;
 * a principal without `approvals:answer` is FORBIDDEN, as on every other door.
 */
export async function findApprovals (
  deps: AdapterDeps, principal: Principal, sessionId: string, requestIds: readonly string[]
): Promise<WaitingApprovals> {
  // The route needs `turns:write`; answering is what POST /v1/approvals/:id guards with its own scope.
  if (!hasScope(principal, 'approvals:answer')) throw new TollgateError('FORBIDDEN', 'answering approvals needs the approvals:answer scope')
  const session = await deps.turns.session(principal, sessionId)
  const turnId = session.turn_ids.at(-1)
  if (turnId === undefined) throw new TollgateError('APPROVAL_NOT_FOUND', 'this session has no turn waiting for an approval')
  const { replay } = await deps.turns.replay(principal, turnId, 0)
  if (replay.kind !== 'events') throw new TollgateError('REPLAY_GAP', 'the turn\'s events are no longer retained; refetch the turn')
  const asked = new Map<string, BusEnvelope>()
  for (const envelope of replay.events) {
    if (envelope.event.kind === 'approval.requested') asked.set(envelope.event.request_id, envelope)
  }
  let afterSeq = 0
  const callIds: string[] = []
  for (const id of requestIds) {
    const envelope = asked.get(id)
    if (envelope === undefined || envelope.event.kind !== 'approval.requested') {
      throw new TollgateError('APPROVAL_NOT_FOUND', `the session's latest turn has no approval request ${id}`)
    }
    afterSeq = Math.max(afterSeq, envelope.seq)
    callIds.push(envelope.event.call_id)
  }
  return { turnId, afterSeq, callIds }
}

/** The client tool calls the session's latest turn waits for: call id → request id. */
export async function waitingClientCalls (deps: AdapterDeps, principal: Principal, sessionId: string): Promise<Map<string, string>> {
  const session = await deps.turns.session(principal, sessionId)
  const turnId = session.turn_ids.at(-1)
  if (turnId === undefined) return new Map()
  const turn = await deps.turns.get(principal, turnId)
  return new Map(turn.pending_approvals.filter((p) => p.client_tool === true).map((p) => [p.call_id, p.request_id]))
}

/** The pending client tool requests of the session's latest turn for these call ids (a frontend's tool messages). */
export async function findClientCalls (
  deps: AdapterDeps, principal: Principal, sessionId: string, callIds: readonly string[]
): Promise<string[]> {
  const waiting = await waitingClientCalls(deps, principal, sessionId)
  return callIds.map((callId) => {
    const requestId = waiting.get(callId)
    if (requestId === undefined) throw new TollgateError('TOOL_CALL_NOT_WAITING', `no call ${callId} waits for its result`)
    return requestId
  })
}

/**
 * Takes the waiting turn over (this request becomes its owner again), applies the answers and
 * streams the turn on from `afterSeq`. An answer that comes too late (the request expired or was
 * answered elsewhere) is not an error here: the stream shows what became of the call.
 */
export async function resumeTurn (
  deps: AdapterDeps, stream: AdapterStream, waiting: WaitingApprovals, answers: readonly AdapterAnswer[]
): Promise<void> {
  const { principal } = stream
  const connection = openConnection(deps, stream)
  connection.turns.add(waiting.turnId)
  try {
    // Owner first: the turn may reach its next approval request before this function goes on.
    deps.turns.setOwner(principal, waiting.turnId, connection.id)
    for (const answer of answers) {
      try {
        await deps.turns.answerApproval(principal, answer.requestId, {
          decision: answer.decision,
          ...(answer.replacement === undefined ? {} : { replacement: answer.replacement }),
          ...(answer.reason === undefined ? {} : { reason: answer.reason }),
          decidedBy: `${stream.channel}:${principalKey(principal)}`,
          channel: stream.channel
        })
      } catch (err) {
        if (!(err instanceof TollgateError && TOO_LATE.has(err.code))) throw err
      }
    }
  } catch (err) {
    deps.turns.setOwner(principal, waiting.turnId, null)
    deps.connections.close(connection.id)
    throw err
  }
  await pipe(deps, stream, connection, waiting.turnId, waiting.afterSeq)
}

/** Answers that came too late for their request; the resumed stream shows what became of the call instead. */
const TOO_LATE = new Set(['APPROVAL_ALREADY_RESOLVED', 'APPROVAL_EXPIRED', 'APPROVAL_CANCELLED'])

/** Writes the translated events of the turn after `afterSeq` until its end or an approval park. */
async function pipe (deps: AdapterDeps, stream: AdapterStream, connection: Connection, turnId: string, afterSeq: number): Promise<void> {
  const { translator } = stream
  let stopped = false
  let unsubscribe: (() => void) | null = null
  const stop = (): void => {
    if (stopped) return
    stopped = true
    unsubscribe?.()
    deps.connections.close(connection.id)
    writer.close()
  }
  const writer = new SseWriter({
    reply: stream.reply,
    turnId,
    headers: stream.headers,
    config: deps.config,
    log: deps.log,
    logFields: { channel: stream.channel },
    onClose: stop
  })
  writer.open()
  writer.write(translator.opening(turnId))
  const deliver = (envelope: BusEnvelope): void => {
    if (stopped) return
    const { frames, park } = translator.translate(envelope)
    if (!writer.write(frames)) return
    deps.metrics?.eventSent('sse')
    if (park === true) {
      deps.turns.setOwner(stream.principal, turnId, null)
      stop()
    }
  }
  const followed = await followTurn({
    bus: deps.bus,
    journal: deps.journal,
    turnId,
    afterSeq,
    knownLastSeq: afterSeq,
    deliver,
    onEnd: stop
  })
  if (followed.kind === 'gap') {
    writer.write(translator.failure('REPLAY_GAP', 'the turn\'s events are no longer retained; refetch the turn'))
    stop()
  } else if (stopped) {
    followed.unsubscribe()
  } else {
    unsubscribe = followed.unsubscribe
  }
}
