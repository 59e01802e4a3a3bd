/**
 * Config errors that teach: each problem of a configuration becomes one line naming the key's full
 * path, what is wrong and how to fix it (the allowed values of an enum, the key a misspelt one
 * probably meant). Every problem is collected before anything is thrown, so one start lists them all.
 */
import type { ErrorObject } from 'ajv'

/**
 * Edit distance counting a swap of two neighbours as one edit (optimal string alignment), with a
 * cut-off: names further apart than `max` are not suggestions.
 */
function distance (a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)]
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const up = rows[i - 1] ?? []
      let d = Math.min((up[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (up[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, (rows[i - 2]?.[j - 2] ?? 0) + 1)
      row[j] = d
    }
    rows.push(row)
  }
  return rows[a.length]?.[b.length] ?? max + 1
}

/** The candidate a misspelt name most likely meant, if one is close enough. */
export function closestName (name: string, candidates: Iterable<string>): string | undefined {
  const lower = name.toLowerCase()
  const max = Math.max(1, Math.min(3, Math.floor(name.length / 3)))
  let best: string | undefined
  let bestDistance = max + 1
  for (const candidate of candidates) {
    const d = distance(lower, candidate.toLowerCase(), max)
    if (d < bestDistance) { best = candidate; bestDistance = d }
  }
  return best
}

export function didYouMean (name: string, candidates: Iterable<string>): string {
  const close = closestName(name, candidates)
  return close === undefined ? '' : `; did you mean ${JSON.stringify(close)}?`
}

function shown (value: unknown): string {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 60 ? `${text.slice(0, 57)}…` : text
}

function keyPath (where: string, instancePath: string): string {
  const parts = instancePath.split('/').slice(1).map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
  let out = where
  for (const part of parts) out += /^\d+$/.test(part) ? `[${part}]` : (out === '' ? part : `.${part}`)
  return out
}

function branchTypes (branches: Array<Record<string, unknown>>): string {
  return branches.map((b) => b.const !== undefined ? JSON.stringify(b.const) : String(b.type ?? 'a value')).join(' or ')
}

/**
 * One line per problem of an ajv run compiled with `allErrors` and `verbose`. The errors of an
 * `anyOf`'s branches are folded into the `anyOf`'s own line (an enum: "must be one of …").
 */
export function schemaProblems (errors: readonly ErrorObject[], where: string): string[] {
  const unions = errors.filter((e) => e.keyword === 'anyOf').map((e) => `${e.schemaPath}/`)
  const lines: string[] = []
  for (const e of errors) {
    if (unions.some((prefix) => e.schemaPath.startsWith(prefix))) continue
    const path = keyPath(where, e.instancePath)
    const got = `(got ${shown(e.data)})`
    switch (e.keyword) {
      case 'additionalProperties': {
        const key = String((e.params as { additionalProperty: string }).additionalProperty)
        const known = Object.keys((e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {})
        const full = path === '' ? key : `${path}.${key}`
        const hint = didYouMean(key, known)
        lines.push(`${full}: unknown key${hint === '' ? `; remove it (known keys here: ${known.join(', ')})` : hint}`)
        break
      }
      case 'anyOf': {
        const branches = e.schema as Array<Record<string, unknown>>
        const enumLike = branches.every((b) => b.const !== undefined)
        lines.push(enumLike
          ? `${path} must be one of ${branches.map((b) => JSON.stringify(b.const)).join(', ')} ${got}`
          : `${path} must be ${branchTypes(branches)} ${got}`)
        break
      }
      case 'required': {
        const missing = String((e.params as { missingProperty: string }).missingProperty)
        lines.push(`${path === '' ? missing : `${path}.${missing}`} is required; add it`)
        break
      }
      case 'pattern': {
        const pattern = String((e.params as { pattern: string }).pattern)
        lines.push(pattern === '^https?://'
          ? `${path} must be an http(s) URL with its scheme, e.g. "https://${String(e.data).replace(/^([a-z][a-z0-9+.-]*:)?\/*/i, '')}" ${got}`
          : `${path} must match ${pattern} ${got}`)
        break
      }
      default:
        lines.push(`${path} ${e.message ?? 'is invalid'} ${got}`)
    }
  }
  return lines
}

/** The message of a configuration that has problems: one line, or a count and one line each. */
export function problemsMessage (problems: readonly string[]): string {
  if (problems.length === 1) return `invalid configuration: ${problems[0] ?? ''}`
  return `invalid configuration, ${problems.length} problems:\n${problems.map((p) => `  - ${p}`).join('\n')}`
}
