/**
 * Deferred MCP loading: instead of every wrapper's schema, the model gets a short list of names
 * (the "## Deferred Tools" prompt section) and the `tool_search` tool, which moves the wrappers
 * it returns into the turn's activated set. The stubs are the policy-filtered wrappers, filtered
 * once: the prompt section, tool_search and pending-call resolution all see the same set.
 */
import { resolveToolName, type ActivatedToolSet } from './activated.js'
import type { Tool } from '../contract.js'

const SECTION_DESCRIPTION_CHARS = 200

export interface DeferredTools {
  /** Admitted wrappers the turn may activate, by name. */
  readonly stubs: ReadonlyMap<string, Tool>
  readonly activated: ActivatedToolSet
  /** The prompt section naming what is still to fetch; '' when nothing is. */
  readonly section: string
  /** A stub by exact name or unique suffix: the same rule the activated set resolves by. */
  lookup (name: string): Tool | undefined
}

function summaryLine (description: string): string {
  const first = (description.split('\n')[0] ?? '').trim()
  return first.length <= SECTION_DESCRIPTION_CHARS ? first : `${first.slice(0, SECTION_DESCRIPTION_CHARS - 1)}…`
}

export function buildDeferredSection (stubs: readonly Tool[], skip: (name: string) => boolean = () => false): string {
  const lines = stubs.filter((t) => !skip(t.name)).map((t) => `${t.name} - ${summaryLine(t.description)}`)
  if (lines.length === 0) return ''
  return [
    '## Deferred Tools',
    '',
    'The tools listed below are available but NOT loaded yet: their parameters are unknown until fetched. ' +
    'Before calling one you MUST fetch it with the `tool_search` tool, by exact names (query "select:name1,name2") ' +
    'or by keywords (query "weather forecast"). A fetched tool can be called from then on.',
    '',
    '<available-deferred-tools>',
    ...lines,
    '</available-deferred-tools>'
  ].join('\n')
}

/** Tools already in `activated` (pre-activated by an `always` filter group) are not listed again. */
export function createDeferredTools (stubs: readonly Tool[], activated: ActivatedToolSet): DeferredTools {
  const byName = new Map(stubs.map((t) => [t.name, t]))
  return {
    stubs: byName,
    activated,
    section: buildDeferredSection(stubs, (name) => activated.has(name)),
    lookup: (name) => resolveToolName(byName, name)
  }
}
