/**
 * The spend ledger: what each budget has spent, kept in the store so every instance sees one
 * figure. A reservation adds a call's worst case to every budget it is made against only when
 * none of them would pass its limit, atomically (the check and the additions are one step of the
 * store); settling adds the difference to the real cost. Amounts are integer nano-dollars, so
 * sums are exact.
 */

/** One budget a reservation is made against: its ledger key, its limit, and when its row may go. */
export interface SpendLine {
  key: string
  limitNano: number
  expiresMs: number
}

export type SpendVerdict =
  | { ok: true }
  /** The first line (in the order given) that would pass its limit, and what it had spent. */
  | { ok: false, key: string, spentNano: number, limitNano: number }

export interface SpendLedger {
  reserve (lines: readonly SpendLine[], amountNano: number): Promise<SpendVerdict>
  /** Adds `deltaNano` (negative: gives back) to each key; a key without a row is left alone. */
  adjust (keys: readonly string[], deltaNano: number): Promise<void>
  spent (key: string): Promise<number>
}

export const NANO_PER_USD = 1_000_000_000

export function toNano (usd: number): number {
  return Math.round(usd * NANO_PER_USD)
}

export function fromNano (nano: number): number {
  return nano / NANO_PER_USD
}

/** The decision of a reservation over the spent amounts read for its lines (in the same order). */
export function judge (lines: readonly SpendLine[], spent: readonly number[], amountNano: number): SpendVerdict {
  for (const [i, line] of lines.entries()) {
    const s = spent[i] ?? 0
    if (s + amountNano > line.limitNano) return { ok: false, key: line.key, spentNano: s, limitNano: line.limitNano }
  }
  return { ok: true }
}

/** The in-process ledger of the memory store: single-threaded, so check-then-add is atomic. */
export class MemorySpendLedger implements SpendLedger {
  private readonly rows = new Map<string, { spent: number, expiresMs: number }>()

  async reserve (lines: readonly SpendLine[], amountNano: number): Promise<SpendVerdict> {
    const now = Date.now()
    const verdict = judge(lines, lines.map((l) => this.live(l.key, now)), amountNano)
    if (!verdict.ok) return verdict
    for (const l of lines) {
      const row = this.rows.get(l.key)
      this.rows.set(l.key, { spent: (row === undefined || row.expiresMs <= now ? 0 : row.spent) + amountNano, expiresMs: l.expiresMs })
    }
    return verdict
  }

  async adjust (keys: readonly string[], deltaNano: number): Promise<void> {
    for (const k of keys) {
      const row = this.rows.get(k)
      if (row !== undefined) row.spent = Math.max(0, row.spent + deltaNano)
    }
  }

  async spent (key: string): Promise<number> {
    return this.live(key, Date.now())
  }

  private live (key: string, now: number): number {
    const row = this.rows.get(key)
    return row === undefined || row.expiresMs <= now ? 0 : row.spent
  }
}
