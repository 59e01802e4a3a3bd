/**
 * Scraped /metrics read with a real Prometheus text-format parser (prom2javascript), flattened
 * back into the samples a query sees: histograms as `_bucket{le}`, `_sum` and `_count`.
 */
import { Readable } from 'node:stream'
import { getMetricsFromStream, type PromData, type PromHistogramData, type PromSummaryData } from 'prom2javascript'

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** A sample line whose value is NaN (prom-client writes `Nan` for an event-loop lag with no samples yet). */
const NAN_SAMPLE = /^(\w+)(?:\{(.*)\})?\s+nan$/i

export async function parseExposition (text: string): Promise<Sample[]> {
  // Prometheus reads NaN in any case; prom2javascript reads no NaN at all, so those lines are
  // taken out before it parses and kept as NaN samples (their labels are not needed by any test).
  const lines = text.split('\n')
  const nan = lines.map((line) => NAN_SAMPLE.exec(line)).filter((m): m is RegExpExecArray => m !== null)
  const families = await getMetricsFromStream(Readable.from([lines.filter((line) => !NAN_SAMPLE.test(line)).join('\n')]))
  const samples: Sample[] = nan.map((m) => ({ name: m[1] ?? '', labels: {}, value: Number.NaN }))
  for (const [name, family] of Object.entries(families)) {
    if (family.type === 'histogram') {
      for (const series of family.data as PromHistogramData[]) {
        for (const [bound, count] of Object.entries(series.buckets)) {
          samples.push({ name: `${name}_bucket`, labels: { ...series.labels, le: bound }, value: count })
        }
        samples.push({ name: `${name}_count`, labels: series.labels, value: series.count })
        if (series.sum !== undefined) samples.push({ name: `${name}_sum`, labels: series.labels, value: series.sum })
      }
    } else if (family.type === 'summary') {
      for (const series of family.data as PromSummaryData[]) {
        for (const [quantile, value] of Object.entries(series.quantiles)) {
          samples.push({ name, labels: { ...series.labels, quantile }, value })
        }
        if (series.count !== undefined) samples.push({ name: `${name}_count`, labels: series.labels, value: series.count })
        if (series.sum !== undefined) samples.push({ name: `${name}_sum`, labels: series.labels, value: series.sum })
      }
    } else {
      for (const series of family.data as PromData[]) samples.push({ name, labels: series.labels, value: series.value })
    }
  }
  return samples
}

/** The value of the one sample with this name whose labels include `labels`; 0 when absent (a counter never incremented). */
export function valueOf (samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value ?? 0
}

/** Like valueOf, but the sample must exist: a pre-initialised series is there before its first event. */
export function presentValueOf (samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (found.length !== 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return (found[0] as Sample).value
}
