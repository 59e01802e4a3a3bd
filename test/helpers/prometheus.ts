/** A reader of the Prometheus text exposition format, enough for assertions on scraped values. */

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

const LINE = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/
const LABEL = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g

export function parseExposition (text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = LINE.exec(line)
    if (m === null) throw new Error(`not an exposition line: ${line}`)
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c))
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) })
  }
  return samples
}

/** The value of the one sample with this name whose labels include `labels`; 0 when absent (a counter never incremented). */
export function valueOf (samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value ?? 0
}
