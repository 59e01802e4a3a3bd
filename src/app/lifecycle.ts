/**
 * One ordered list of what the gateway opens and the order it closes it in. Start-up registers
 * each resource as it opens it; shutdown and a failed start both close through `close()`, so the
 * order lives here once instead of in a shutdown routine and a start-up rollback.
 */

/**
 * Close order. The scheduler first, so no tick starts a turn during shutdown; then turns, so every
 * socket still receives its turns' terminal events; then the HTTP side (WebSockets get 1001
 * "going away"); then what turns used (the webhook dispatcher among them: what it has not
 * delivered waits in the store); the journal before the bus it publishes to; the store and the
 * authenticator last, since the lease and the journal write through the store.
 */
export const CLOSE_ORDER = [
  'schedules', 'turns', 'observability', 'http', 'mcp', 'files', 'sandbox', 'permissions', 'providers', 'notifications', 'lease', 'slots', 'journal',
  'bus', 'audit', 'store', 'auth'
] as const

export type Resource = typeof CLOSE_ORDER[number]

export class Lifecycle {
  private readonly closers = new Map<Resource, () => Promise<void> | void>()
  private closing: Promise<void> | null = null

  opened (resource: Resource, close: () => Promise<void> | void): void {
    this.closers.set(resource, close)
  }

  /** Shutdown: each step in order; a failing step stops the rest and rejects. Idempotent. */
  async close (): Promise<void> {
    this.closing ??= this.run(false)
    await this.closing
  }

  /** A failed start: close whatever opened, ignoring errors so the start's own error surfaces. */
  async abandon (): Promise<void> {
    this.closing ??= this.run(true)
    await this.closing
  }

  private async run (ignoreErrors: boolean): Promise<void> {
    for (const resource of CLOSE_ORDER) {
      const close = this.closers.get(resource)
      if (close === undefined) continue
      try {
        await close()
      } catch (err) {
        if (!ignoreErrors) throw err
      }
    }
  }
}
