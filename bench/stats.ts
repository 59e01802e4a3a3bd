/** Percentiles and number formatting for the report. */

export interface Summary {
  count: number
  p50: number
  p99: number
}

/** Nearest-rank percentile of an ascending array. */
export function percentile (sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number
}

export function summarize (values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b)
  return { count: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) }
}

export function fmt (value: number, digits = 2): string {
  if (!Number.isFinite(value)) return 'n/a'
  return value.toFixed(digits)
}

export function ratio (a: number, b: number): string {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return 'n/a'
  return `${(a / b).toFixed(2)}×`
}
