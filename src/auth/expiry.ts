/** Runs a callback when a credential stops being accepted, for connections that outlive a request. */

// setTimeout fires at once for delays above 2^31-1 ms; longer waits re-arm in steps.
const MAX_TIMER_MS = 2_147_483_647

export function whenExpired (expiresAt: number, onExpired: () => void, now: () => number = Date.now): () => void {
  let timer: NodeJS.Timeout | undefined
  const arm = (): void => {
    const left = expiresAt - now()
    if (left <= 0) {
      onExpired()
      return
    }
    timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS))
    timer.unref()
  }
  arm()
  return () => { clearTimeout(timer) }
}
