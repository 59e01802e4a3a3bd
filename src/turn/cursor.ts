/**
 * Where a turn's loop stands, for durable turns: the loop keeps a `LoopCursor` current and tells
 * its `LoopCheckpoints` when it reaches a safe point (a model call about to be made, a prepared
 * round about to run); the service writes a checkpoint from it. `LoopEntry` is the way back in
 * after a restart (loop.ts's `resumeLoop`).
 */
import type { ProviderState } from '../providers/types.js'
import type { PendingApproval } from '../../schemas/approval.js'
import type { ApprovalDecision } from '../../schemas/events.js'
import type { ParsedCall } from './parse.js'
import type { ToolSlot } from './results.js'

/** A call of the round whose approval gate is open (the request waits for a person). */
export interface WaitingGate {
  call: { callId: string, name: string, arguments: Record<string, unknown> }
  /** The resolved tool's name (re-resolved on resume). */
  tool: string
}

/** One model response's calls, from parsing through preparation to dispatch. */
export interface RoundCursor {
  /** Assistant text as the model wrote it (history echoes it). */
  text: string
  native: boolean
  calls: ParsedCall[]
  parallel: boolean
  /** What the answering provider needs back with this message (thinking blocks, reasoning items). */
  providerState?: ProviderState
  /**
   * One per call prepared so far, in model order (the waiting call's included); runnable ones have
   * `tool` set and no `prefill`.
   */
  slots: ToolSlot[]
  /** Arguments as the model sent them, by slot index (loop detection keys on these). */
  originalArgs: Array<Record<string, unknown>>
  /** Prompt-required shell signatures seen earlier in this round. */
  shellSignatures: Set<string>
  searchPending: boolean
  /** Index of the call being prepared; `calls.length` once the round is prepared. */
  next: number
  waiting: WaitingGate | null
}

export type LoopStep = 'model' | 'prepare' | 'dispatch' | 'collect'

export interface LoopCursor {
  step: LoopStep
  /** Protocol-parse retries used so far. */
  malformed: number
  /** The round being prepared or run; null at a model call. */
  round: RoundCursor | null
}

/** Safe points a checkpoint may be written at (an approval wait is reported by the approval channel). */
export type SafePoint = 'model' | 'dispatch'

export interface LoopCheckpoints {
  readonly cursor: LoopCursor
  /** The loop reached a safe point; false: stop here, the gateway is stopping (the checkpoint holds). */
  reached (point: SafePoint): boolean
  /** As `reached` at a safe point whose checkpoint is stored already: true means stop here. */
  stopping (): boolean
  /** Resolves once the last checkpoint is stored: a round's tools start only then. */
  stored (): Promise<void>
}

/** What the log says became of a prepared call after the checkpoint. */
export type RecoveredCall =
  /** `announced`: its `tool_call` card is in the log (a card lost in the stop is sent on resume). */
  | { kind: 'started', announced: boolean }
  | { kind: 'settled', status: ToolSlotStatus, success: boolean, output: string, error: string | null, receipt: string | null, durationMs: number }

type ToolSlotStatus = NonNullable<ToolSlot['outcome']>['status']

/** An approval answered before the restart, but after the checkpoint. */
export interface ResolvedApproval {
  decision: ApprovalDecision
  decidedBy: string
  /** Principal key of the answer: only the turn's owner can answer, so the owner's. */
  principal: string
}

export type LoopEntry =
  | { step: 'model', iteration: number, malformed: number }
  | {
    step: 'approval'
    iteration: number
    malformed: number
    round: RoundCursor
    request: PendingApproval
    /** Set when the log shows the request was already answered. */
    resolved: ResolvedApproval | null
  }
  | { step: 'dispatch', iteration: number, malformed: number, round: RoundCursor, recovered: ReadonlyMap<string, RecoveredCall> }

export function newRound (text: string, native: boolean, calls: ParsedCall[], parallel: boolean): RoundCursor {
  return {
    text, native, calls, parallel, slots: [], originalArgs: [], shellSignatures: new Set(), searchPending: false, next: 0, waiting: null
  }
}
