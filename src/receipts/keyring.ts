/**
 * Receipt key lifetime: a turn's key verifies its receipts while the turn runs and for
 * `turns.retention_ms` after it ends, then is forgotten. Running turns hold their own key; this
 * ring keeps the keys of finished ones until the retention queue drops them.
 */
import type { ReceiptKey } from './keys.js'

export class ReceiptKeyring {
  private readonly kept = new Map<string, { key: ReceiptKey, expires: number }>()

  keep (turnId: string, key: ReceiptKey, expires: number): void {
    this.kept.set(turnId, { key, expires })
  }

  forget (turnId: string): void {
    this.kept.delete(turnId)
  }

  /** The key of a finished turn, or null once its retention has passed. */
  get (turnId: string, now: number = Date.now()): ReceiptKey | null {
    const kept = this.kept.get(turnId)
    // Swept periodically, so an expired entry may still be here: its key is gone all the same.
    return kept !== undefined && kept.expires > now ? kept.key : null
  }
}
