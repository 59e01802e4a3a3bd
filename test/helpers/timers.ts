/**
 * The real clock as a turn host's `later`/`clear` (RunningTurn, TurnOwnership): unit tests that
 * build a host by hand pass these through; nothing here delays a test.
 */
export const realTimers = {
  later: (ms: number, fn: () => void): NodeJS.Timeout => setTimeout(fn, ms).unref(),
  clear: (timer: NodeJS.Timeout): void => { clearTimeout(timer) }
}
