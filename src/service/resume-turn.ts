/**
 * Durable turns across a restart: the checkpointer a new durable turn starts with, and the
 * resume of an orphaned turn from its checkpoint (read the record, checkpoint, session and log;
 * adopt the turn in the store, exactly one instance wins; rebuild its execution context, engine
 * state and loop position with resume.ts; run it on as a RunningTurn after `turn.resumed`).
 */
import type { Logger } from 'pino'
import type { TurnRequest } from '../../schemas/turn.js'
import { SessionGrants } from '../approval/grants.js'
import type { BusEnvelope } from '../bus/bus.js'
import { interruptOrphan } from '../cluster/recovery.js'
import { readTurnLog, summarizeLog, withLoggedProgress } from '../cluster/turn-log.js'
import { ownEntry } from '../core/json/own.js'
import type { TurnJournal } from '../journal/journal.js'
import { tenantOf } from '../core/tenancy.js'
import type { ReceiptKey } from '../receipts/keys.js'
import type { ReceiptKeyring } from '../receipts/keyring.js'
import type { SessionRecord, Store, TurnRecord } from '../store/store.js'
import { UsageTally } from '../turn/usage.js'
import { decodeCheckpoint, TurnCheckpointer, type CheckpointDoc, type TurnKnobs } from './checkpoint.js'
import { loopEntry, restoreLoopState, resumedHistory, resumedSteering } from './resume.js'
import { RunningTurn, type TurnEnding, type TurnHost } from './running-turn.js'
import { assembleTurnState, resolveExecution, startingHistory, type ExecutionDeps, type TurnStateDeps } from './turn-state.js'

/** Which safe point a resumed turn comes back from, as `turn.resumed` names it. */
const RESUMED_FROM = { model: 'model_call', approval: 'approval_wait', dispatch: 'tool_dispatch' } as const

/** What a resume needs from the turn service. */
export interface ResumeScope {
  deps: ExecutionDeps & { store: Store, journal: TurnJournal, log: Logger, receipts: ReceiptKeyring }
  stateDeps: TurnStateDeps
  host: TurnHost
  receiptKeyOf: (turn: TurnRecord) => ReceiptKey | null
  /** Registers the resumed turn as running here: active, its session busy, its slot held. */
  adopt: (running: RunningTurn) => void
  /** What the turn gives back when it stops running here: as for any turn of this instance. */
  ending: (record: TurnRecord) => TurnEnding
}

/** The checkpointer of a new durable turn: its knobs, as a resume will need them. */
export function checkpointerFor (running: RunningTurn, request: TurnRequest, channel: string, tenant: string): TurnCheckpointer {
  const knobs: TurnKnobs = {
    message: request.message,
    ...(request.tools === undefined ? {} : { tools: request.tools }),
    ...(request.client_tools === undefined ? {} : { client_tools: request.client_tools }),
    ...(request.approval_timeout_ms === undefined ? {} : { approval_timeout_ms: request.approval_timeout_ms }),
    interactive: request.interactive !== false,
    detach: request.detach === true,
    owned: running.ownership.connection !== null,
    channel,
    tenant,
    history_base: 0
  }
  return new TurnCheckpointer(running, knobs, new UsageTally())
}

/**
 * Continues an orphaned turn from its checkpoint. Answers false when it cannot (no checkpoint,
 * one this version cannot read, an agent no longer configured): the caller interrupts it
 * instead. True also when another instance took it over first.
 */
export async function resumeTurn (scope: ResumeScope, orphan: { turnId: string, instanceId: string | null }): Promise<boolean> {
  const { store, journal, log, config, receipts: keyring } = scope.deps
  const [record, row] = await Promise.all([store.getTurn(orphan.turnId), store.readCheckpoint(orphan.turnId)])
  if (record === null || record.status !== 'running' || row === null) return false
  const doc = decodeCheckpoint(row.doc)
  const session = await store.getSession(tenantOf(record.owner), record.session_id)
  if (doc === null || session === null || ownEntry(config.agents, record.agent) === undefined) return false
  // Read before adopting: what the log says of the checkpoint's round decides where the loop goes on.
  const events = await readTurnLog(journal, record.turn_id)
  // The log's last event, not the record's last_seq: the turn goes on right after what a replay serves.
  const lastSeq = Math.max(events.at(-1)?.seq ?? 0, await journal.lastSeq(record.turn_id).catch(() => 0))
  // The record was saved at approval waits and decisions: the log has the calls since.
  const current = withLoggedProgress(record, summarizeLog(events))
  // Without a configured master key the old process's key is gone: later receipts get this process's.
  if (scope.receiptKeyOf(current) === null) current.receipt_key_id = keyring.currentId
  const receipts = (): ReceiptKey => scope.receiptKeyOf(current) ?? keyring.forNewTurn(current.turn_id).key
  if (!await store.adoptTurn(record.turn_id, orphan.instanceId)) return true
  try {
    continueTurn(scope, { record: current, session, doc, checkpointSeq: row.seq, events, lastSeq, receipts })
  } catch (err) {
    // Taken over already: it is this instance's own orphan now.
    log.error({ err, turn_id: record.turn_id }, 'could not resume a turn from its checkpoint; interrupting it')
    await interruptOrphan({ store, journal, log }, { turnId: record.turn_id, instanceId: store.instanceId })
  }
  return true
}

interface Orphan {
  record: TurnRecord
  session: SessionRecord
  doc: CheckpointDoc
  checkpointSeq: number
  events: BusEnvelope[]
  lastSeq: number
  receipts: () => ReceiptKey
}

function continueTurn (scope: ResumeScope, orphan: Orphan): void {
  const { record, session, doc, events, lastSeq } = orphan
  const { turn } = doc
  const request: TurnRequest = {
    message: turn.message,
    ...(turn.tools === undefined ? {} : { tools: turn.tools }),
    ...(turn.client_tools === undefined ? {} : { client_tools: turn.client_tools }),
    ...(turn.approval_timeout_ms === undefined ? {} : { approval_timeout_ms: turn.approval_timeout_ms }),
    interactive: turn.interactive,
    detach: turn.detach
  }
  const grants = new SessionGrants(doc.grants)
  const { channel, tenant } = turn
  const exec = resolveExecution(scope.deps, { request, session, grants, channel, tenant, receipts: orphan.receipts })
  const running = new RunningTurn(scope.host, record, {
    ownerConnection: null,
    detach: true,
    lastSeq,
    steering: resumedSteering(scope.deps.config.turns.max_steering_messages, doc, events)
  })
  record.last_seq = lastSeq
  record.iterations = Math.max(record.iterations, doc.iteration)
  // Nothing waits any more but what the loop reopens.
  const reopened = doc.waiting?.request.request_id
  record.pending_approvals = record.pending_approvals.filter((p) => p.request_id === reopened)
  const checkpointer = new TurnCheckpointer(running, { ...turn }, UsageTally.from(doc.usage))
  running.parksWhen(() => checkpointer.parked())
  const start = startingHistory(scope.deps.config, record.agent, session, turn.message)
  const state = assembleTurnState(scope.stateDeps, running, session, request, { checkpointer, history: resumedHistory(start, doc) })
  restoreLoopState(exec, state, doc)
  checkpointer.attach(exec, state)
  const entry = loopEntry(exec, doc, events, record.owner)
  scope.adopt(running)
  running.ownership.ownAfterRestart(turn.owned)
  running.armTimeout()
  state.emit({ kind: 'turn.resumed', from_checkpoint: RESUMED_FROM[doc.step], checkpoint_seq: orphan.checkpointSeq })
  scope.deps.log.warn({ turn_id: record.turn_id, session_id: record.session_id, step: doc.step }, 'resumed a turn from its checkpoint')
  void running.run(exec, state, session, grants, turn.channel, scope.ending(record), { checkpoints: checkpointer.loop, entry })
}
