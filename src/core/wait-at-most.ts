/**
 * Waits for `work` to settle, or for `ms` to pass, whichever comes first; the timer does not
 * outlive the wait. For a close or a hand-over that must not hang on a peer that stopped
 * answering: `work` goes on after the wait gives up. A rejection of `work` within the wait is
 * passed on.
 */
export async function waitAtMost (work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([work, new Promise<void>((resolve) => { timer = setTimeout(resolve, ms) })])
  clearTimeout(timer)
}
