/**
 * The ACP `kind` of a Tollgate tool, which editors use to pick an icon and a way to show the call.
 * Built-in tools are named; MCP tools (`<server>__<tool>`) are guessed from their name's words.
 */
import type { ToolKind } from '@agentclientprotocol/sdk'

const BUILT_IN: Readonly<Record<string, ToolKind>> = {
  file_read: 'read',
  file_write: 'edit',
  shell: 'execute',
  http_request: 'fetch',
  delegate: 'execute',
  tool_search: 'search'
}

/** Words in a tool's name that say what it does, checked in this order. */
const BY_WORD: ReadonlyArray<readonly [RegExp, ToolKind]> = [
  [/(^|_)(delete|remove|rm|forget|purge|unlink)(_|$)/, 'delete'],
  [/(^|_)(move|rename|mv)(_|$)/, 'move'],
  [/(^|_)(write|edit|create|update|patch|store|add|set|put)(_|$)/, 'edit'],
  [/(^|_)(search|find|grep|glob|query|list)(_|$)/, 'search'],
  [/(^|_)(fetch|http|get_url|download|browse)(_|$)/, 'fetch'],
  [/(^|_)(read|get|cat|show|view|open)(_|$)/, 'read'],
  [/(^|_)(run|exec|execute|shell|command|bash)(_|$)/, 'execute']
]

export function toolKind (name: string): ToolKind {
  const known = Object.hasOwn(BUILT_IN, name) ? BUILT_IN[name] : undefined
  if (known !== undefined) return known
  const local = (name.includes('__') ? name.slice(name.indexOf('__') + 2) : name).toLowerCase()
  for (const [pattern, kind] of BY_WORD) if (pattern.test(local)) return kind
  return 'other'
}

/** A short title for the editor's tool card: the tool and its main argument. */
export function toolTitle (name: string, args: Record<string, unknown>): string {
  const main = ['path', 'command', 'url', 'query'].map((k) => args[k]).find((v) => typeof v === 'string')
  if (typeof main !== 'string') return name
  const shown = main.length > 80 ? `${main.slice(0, 79)}…` : main
  return `${name}: ${shown}`
}
