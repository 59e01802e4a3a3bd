/**
 * tool_filter_groups: per-turn visibility of admitted MCP tools. A group never grants anything:
 * it only chooses among tools the policy already admitted. An MCP tool stays visible iff some
 * group has a pattern matching it and the group is `always`, or `dynamic` with a keyword that
 * occurs (case-insensitively) in the user message. No groups: no filtering.
 */
import type { ToolFilterGroup } from '../../../schemas/config.js'

/** Only the first `*` is a wildcard (prefix*suffix, lengths checked); no `*`: exact name. */
export function globMatches (pattern: string, name: string): boolean {
  const star = pattern.indexOf('*')
  if (star === -1) return pattern === name
  const prefix = pattern.slice(0, star)
  const suffix = pattern.slice(star + 1)
  return name.length >= prefix.length + suffix.length && name.startsWith(prefix) && name.endsWith(suffix)
}

function groupMatches (group: ToolFilterGroup, name: string): boolean {
  return group.tools.some((pattern) => globMatches(pattern, name))
}

function keywordHit (group: ToolFilterGroup, message: string): boolean {
  const text = message.toLowerCase()
  return group.keywords.some((k) => text.includes(k.toLowerCase()))
}

export function visibleUnderGroups (groups: readonly ToolFilterGroup[], name: string, message: string): boolean {
  if (groups.length === 0) return true
  return groups.some((g) => groupMatches(g, name) && (g.mode === 'always' || keywordHit(g, message)))
}

/** Deferred mode pre-activates these: they are in every turn's specs without a tool_search. */
export function matchesAlwaysGroup (groups: readonly ToolFilterGroup[], name: string): boolean {
  return groups.some((g) => g.mode === 'always' && groupMatches(g, name))
}
