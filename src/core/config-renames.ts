/**
 * Renamed configuration keys (schemas/config.ts RENAMED_CONFIG_KEYS): before validation, a value
 * given under a key's old name moves to its new name, so a configuration written for an earlier
 * version still starts. Each use is remembered so the gateway can warn once at start, naming the
 * new key; both names in one configuration are a problem, as neither could be said to win.
 */
import { RENAMED_CONFIG_KEYS } from '../../schemas/config.js'

/** One old key name found in a configuration, with its full path (entry names filled in). */
export interface DeprecatedKey {
  old: string
  new: string
}

type Plain = Record<string, unknown>

function isPlain (v: unknown): v is Plain {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** The tables a dotted parent path reaches, `*` standing for every entry of a map, with their full paths. */
function tablesAt (root: Plain, segments: readonly string[]): Array<{ table: Plain, path: string }> {
  let found: Array<{ table: Plain, path: string }> = [{ table: root, path: '' }]
  for (const segment of segments) {
    const next: Array<{ table: Plain, path: string }> = []
    for (const { table, path } of found) {
      const names = segment === '*' ? Object.keys(table) : [segment]
      for (const name of names) {
        const child = Object.hasOwn(table, name) ? table[name] : undefined
        if (isPlain(child)) next.push({ table: child, path: path === '' ? name : `${path}.${name}` })
      }
    }
    found = next
  }
  return found
}

/**
 * Moves every old key of `config` (mutated in place) to its new name; the old keys found, and a
 * problem line for each place that gives both names.
 */
export function applyRenamedKeys (config: unknown, problems: string[]): DeprecatedKey[] {
  const used: DeprecatedKey[] = []
  if (!isPlain(config)) return used
  for (const rename of RENAMED_CONFIG_KEYS) {
    const oldSegments = rename.old.split('.')
    const oldKey = oldSegments.pop() ?? ''
    const newKey = rename.new.split('.').pop() ?? ''
    for (const { table, path } of tablesAt(config, oldSegments)) {
      if (!Object.hasOwn(table, oldKey)) continue
      const prefix = path === '' ? '' : `${path}.`
      if (Object.hasOwn(table, newKey)) {
        problems.push(`${prefix}${oldKey} and ${prefix}${newKey} are both set; ${oldKey} is the old name of ${newKey}: keep only ${prefix}${newKey}`)
      } else {
        table[newKey] = table[oldKey]
        used.push({ old: `${prefix}${oldKey}`, new: `${prefix}${newKey}` })
      }
      delete table[oldKey]
    }
  }
  return used
}

/** The warning line of an old key name, the same wherever it is logged. */
export function deprecationMessage (key: DeprecatedKey): string {
  return `config key ${key.old} is deprecated: it is now ${key.new}; rename it`
}
