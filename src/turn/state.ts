/**
 * A turn's engine state (`TurnState`, context.ts), made in one place: for a turn the service
 * runs (src/service/turn-state.ts), for a delegated sub-turn (subturn.ts) and for the engine
 * tests. The caller says who the turn is and where its events and records go; the loop's
 * bookkeeping always starts fresh here (a resumed turn's is restored over it afterwards).
 */
import type { Logger } from 'pino'
import { lazyProperties } from '../core/lazy-properties.js'
import type { ChatMessage } from '../providers/types.js'
import { LoopDetector } from './loop-detector.js'
import type { LoopDetectionKnobs, TurnState } from './context.js'

/** What a turn's state is made from. */
export type TurnStateInit = Pick<TurnState,
  'turnId' | 'sessionId' | 'signal' | 'interactive' | 'steering' | 'holding' | 'spending' | 'tenant' |
  'emit' | 'approvals' | 'recordToolCall' | 'recordApproval' | 'recordCallUsage'
> & {
  history: ChatMessage[]
  /** The logger, or with `logBindings` the parent of the turn's own logger. */
  log: Logger
  /**
   * The turn's logger is a child of `log` with these bindings, made on first use: most turns log
   * nothing, and a child logger serialises its bindings at once.
   */
  logBindings?: Record<string, unknown>
  /** The agent's loop detection settings. */
  loopDetection: LoopDetectionKnobs
  /** Shared with the turn a sub-turn was delegated from; a new set otherwise. */
  promptShellSignatures?: Set<string>
}

const withLog = lazyProperties<{ log: Logger, bindings: Record<string, unknown> | undefined }, { log: Logger }>({
  log: ({ log, bindings }) => bindings === undefined ? log : log.child(bindings)
})

export function createTurnState (init: TurnStateInit): TurnState {
  const { loopDetection } = init
  return withLog<Omit<TurnState, 'log'>>({
    turnId: init.turnId,
    sessionId: init.sessionId,
    history: init.history,
    signal: init.signal,
    interactive: init.interactive,
    ...(init.steering === undefined ? {} : { steering: init.steering }),
    ...(init.holding === undefined ? {} : { holding: init.holding }),
    ...(init.spending === undefined ? {} : { spending: init.spending }),
    ...(init.tenant === undefined ? {} : { tenant: init.tenant }),
    emit: init.emit,
    approvals: init.approvals,
    recordToolCall: init.recordToolCall,
    recordApproval: init.recordApproval,
    recordCallUsage: init.recordCallUsage,
    promptShellSignatures: init.promptShellSignatures ?? new Set(),
    dedupSignatures: new Set(),
    loopDetector: new LoopDetector({
      enabled: loopDetection.enabled,
      windowSize: loopDetection.window_size,
      maxRepeats: loopDetection.max_repeats
    }),
    systemNotes: [],
    iteration: 0,
    startedAt: Date.now(),
    lastOutputHash: null,
    identicalOutputCount: 0,
    receipts: []
  }, { log: init.log, bindings: init.logBindings })
}
