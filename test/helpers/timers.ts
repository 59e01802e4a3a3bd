import { IsoClock } from '../../src/core/clock.js'

/**
 * The real clock as a turn host's `clock`/`later`/`clear` (RunningTurn, TurnOwnership): unit tests that
 * build a host by hand pass these through; nothing here delays a test.
 */
export const realTimers = {
  clock: new IsoClock(),
  later: (ms: number, fn: () => void): NodeJS.Timeout => setTimeout(fn, ms).unref(),
  clear: (timer: NodeJS.Timeout): void => { clearTimeout(timer) }
}
