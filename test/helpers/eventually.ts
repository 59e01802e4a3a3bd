/**
 * The one way a test waits for something that has no event of its own to wait on: `check` is
 * polled (every 10 ms) until it holds, or the wait fails naming `what`. Generous by default: a
 * loaded machine may be slow, and the wait asserts nothing about time.
 */
export interface EventuallyOptions {
  what: string
  timeoutMs?: number
}

export async function eventually (check: () => boolean | Promise<boolean>, options: EventuallyOptions): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000)
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${options.what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
