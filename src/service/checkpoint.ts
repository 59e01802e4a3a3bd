/**
 * The checkpoint of a durable turn: what its loop needs to continue after a restart, written at
 * the loop's safe points in the same transaction as that step's events (see
 * docs/persistence.md, "Durable turns"). It references rather than copies: the session's
 * history stays in the session (unchanged while the turn runs), the current round's results stay
 * in the event log; only the messages this turn appended and the loop's bookkeeping are kept.
 */
import type { PendingApproval } from '../../schemas/approval.js'
import type { ApprovalGrant } from '../../schemas/session.js'
import type { TurnRequest } from '../../schemas/turn.js'
import type { ObservedCheckpointStep } from '../observe/observer.js'
import type { ChatMessage, ProviderState } from '../providers/types.js'
import type { ResolvedAgentExecution, TurnState } from '../turn/context.js'
import type { LoopCheckpoints, LoopCursor, WaitingGate } from '../turn/cursor.js'
import type { DetectorRecord } from '../turn/loop-detector.js'
import type { ParsedCall } from '../turn/parse.js'
import type { RawOutcome, ToolSlot, UnavailableTool } from '../turn/results.js'
import type { UsageCounts, UsageTally } from '../turn/usage.js'

export const CHECKPOINT_VERSION = 1

/** Which safe point the checkpoint was written at. */
export type CheckpointStep = ObservedCheckpointStep

/** What a turn was started with that its loop keeps needing (never changes during the turn). */
export interface TurnKnobs {
  message: string
  tools?: TurnRequest['tools']
  /** The turn's client tools: a resumed turn offers them again and waits for their results. */
  client_tools?: TurnRequest['client_tools']
  approval_timeout_ms?: number
  interactive: boolean
  detach: boolean
  /** An owner connection held the turn (it died with the old process). */
  owned: boolean
  channel: string
  tenant: string
  /** Messages of the turn's history that came from the session (and the user's message). */
  history_base: number
}

interface SlotDoc {
  index: number
  call_id: string
  provider_call_id: string | null
  name: string
  arguments: Record<string, unknown>
  prefill: RawOutcome | null
  unavailable: UnavailableTool | null
  /** The resolved tool's name when the call will run. */
  tool: string | null
}

export interface RoundDoc {
  text: string
  native: boolean
  /** The answering provider's state of the round's assistant message (kept exactly: signatures). */
  provider_state?: ProviderState
  calls: ParsedCall[]
  parallel: boolean
  slots: SlotDoc[]
  original_args: Array<Record<string, unknown>>
  shell_signatures: string[]
  search_pending: boolean
  next: number
}

export interface CheckpointDoc {
  v: typeof CHECKPOINT_VERSION
  step: CheckpointStep
  iteration: number
  malformed: number
  turn: TurnKnobs
  /** The messages the loop appended after the turn's start (rounds, parse feedback, steering messages). */
  appended: ChatMessage[]
  /**
   * Steering messages in `appended`: the turn's `user.message` events after these are queued again
   * on resume. Absent in checkpoints of versions before steering (none then).
   */
  steered?: number
  loop: {
    dedup: string[]
    prompt_shell: string[]
    detector: DetectorRecord[]
    notes: string[]
    started_at: number
    last_output_hash: string | null
    identical: number
    receipts: string[]
  }
  usage: UsageCounts
  activated: string[]
  grants: ApprovalGrant[]
  round?: RoundDoc
  waiting?: WaitingGate & { request: PendingApproval }
}

/** What the service knows of a turn besides its engine state. */
export interface CheckpointSource {
  exec: ResolvedAgentExecution
  state: TurnState
  cursor: LoopCursor
  knobs: TurnKnobs
  usage: UsageCounts
}

function slotDoc (slot: ToolSlot): SlotDoc {
  return {
    index: slot.index,
    call_id: slot.callId,
    provider_call_id: slot.providerCallId,
    name: slot.name,
    arguments: slot.arguments,
    prefill: slot.prefill,
    unavailable: slot.unavailable,
    tool: slot.tool?.name ?? null
  }
}

/** The checkpoint of `source` at `step`; `request` is the approval waiting at an `approval` step. */
export function checkpointDoc (source: CheckpointSource, step: CheckpointStep, request?: PendingApproval): CheckpointDoc {
  const { exec, state, cursor, knobs } = source
  const round = cursor.round
  const doc: CheckpointDoc = {
    v: CHECKPOINT_VERSION,
    step,
    iteration: state.iteration,
    malformed: cursor.malformed,
    turn: knobs,
    appended: state.history.slice(knobs.history_base),
    steered: state.steering?.consumed ?? 0,
    loop: {
      dedup: [...state.dedupSignatures],
      prompt_shell: [...state.promptShellSignatures],
      detector: state.loopDetector.snapshot(),
      notes: state.systemNotes,
      started_at: state.startedAt,
      last_output_hash: state.lastOutputHash,
      identical: state.identicalOutputCount,
      receipts: state.receipts
    },
    usage: source.usage,
    activated: exec.activated?.list().map((t) => t.name) ?? [],
    grants: exec.approval.alwaysAllowed()
  }
  if (step !== 'model' && round !== null) {
    doc.round = {
      text: round.text,
      native: round.native,
      calls: round.calls,
      parallel: round.parallel,
      slots: round.slots.map(slotDoc),
      original_args: round.originalArgs,
      shell_signatures: [...round.shellSignatures],
      search_pending: round.searchPending,
      next: round.next,
      ...(round.providerState === undefined ? {} : { provider_state: round.providerState })
    }
  }
  if (step === 'approval' && round?.waiting != null && request !== undefined) doc.waiting = { ...round.waiting, request }
  return doc
}

/** The stored text of a checkpoint, or null when it is not one this version can resume. */
export function decodeCheckpoint (text: string): CheckpointDoc | null {
  try {
    const doc = JSON.parse(text) as Partial<CheckpointDoc>
    if (doc.v !== CHECKPOINT_VERSION || typeof doc.step !== 'string' || typeof doc.iteration !== 'number') return null
    return doc as CheckpointDoc
  } catch {
    return null
  }
}

/**
 * Writes one turn's checkpoints: at the loop's safe points and while an approval of the turn's
 * own round waits (a delegated sub-turn's approvals are not safe points: the delegate call is
 * running).
 */
export class TurnCheckpointer {
  readonly cursor: LoopCursor = { step: 'model', malformed: 0, round: null }
  readonly loop: LoopCheckpoints
  private source: Pick<CheckpointSource, 'exec' | 'state'> | null = null
  /** A sequential round's next tool is held back because the gateway is stopping. */
  private held = false

  constructor (
    private readonly running: { readonly parkRequested: boolean, stageCheckpoint: (doc: string) => void, written: () => Promise<void> },
    readonly knobs: TurnKnobs,
    readonly usage: UsageTally
  ) {
    this.loop = {
      cursor: this.cursor,
      reached: (point) => {
        this.write(point)
        return !this.running.parkRequested
      },
      stopping: () => this.running.parkRequested,
      stored: async () => { await this.running.written() }
    }
  }

  /** The engine state is assembled after the checkpointer (its approval channel reports here). */
  attach (exec: ResolvedAgentExecution, state: TurnState): void {
    this.source = { exec, state }
  }

  approvalWaiting (request: PendingApproval): void {
    if (this.cursor.round?.waiting?.call.callId === request.call_id) this.write('approval', request)
  }

  /** Whether the next tool may start: not once the gateway is stopping. */
  holding (): boolean {
    this.held = this.running.parkRequested
    return this.held
  }

  /** Parked safely: at a model call (made again on resume), waiting for a person, or with no tool running. */
  parked (): boolean {
    return this.cursor.step === 'model' || this.cursor.round?.waiting != null || this.held
  }

  /**
   * The checkpoint at the turn's first model call, as text, for the transaction that creates the
   * turn (its loop then starts without writing it again: `LoopDurability.announced`); null if it
   * could not be made (the turn then has none until its next safe point).
   */
  first (): string | null {
    if (this.source === null) throw new Error('a checkpointer is attached to its turn before its first checkpoint')
    return this.doc('model')
  }

  private write (step: CheckpointStep, request?: PendingApproval): void {
    const doc = this.doc(step, request)
    if (doc !== null) this.running.stageCheckpoint(doc)
  }

  /**
   * The document's text, or null when there is no engine state yet or it cannot be made. A
   * checkpoint is never a reason to end a turn: the failure is logged and counted, and the turn
   * goes on with its last good checkpoint (a restart resumes from there).
   */
  private doc (step: CheckpointStep, request?: PendingApproval): string | null {
    if (this.source === null) return null
    const { exec, state } = this.source
    try {
      const source = { exec, state, cursor: this.cursor, knobs: this.knobs, usage: this.usage.counts() }
      return JSON.stringify(checkpointDoc(source, step, request))
    } catch (err) {
      state.log.error({ err, step }, 'could not make the turn\'s checkpoint; it goes on from its last one')
      exec.observer.record({
        kind: 'checkpoint_failed', step, turn_id: state.turnId, session_id: state.sessionId, agent: exec.agent, channel: exec.channel
      })
      return null
    }
  }
}
