/**
 * Permission rules of one risk profile, in Claude Code's shape: `tool` or `tool(specifier)` in
 * `allow`, `ask` and `deny` lists. Parsed and checked once at gateway start (an unknown tool or
 * specifier is a start-up error), then matched against calls by `permissions.ts`.
 */
import { createHash } from 'node:crypto'
import { posix } from 'node:path'
import type { PlannedCommand } from './shell-plan.js'

export type RuleList = 'allow' | 'ask' | 'deny'

export type RuleMatcher =
  | { kind: 'tool' }
  | { kind: 'shell_exact', words: string[] }
  | { kind: 'shell_prefix', words: string[] }
  | { kind: 'path', pattern: RegExp }
  | { kind: 'domain', domain: string }

export interface PermissionRule {
  /** The rule as written in the configuration; what decisions and the model are told. */
  text: string
  list: RuleList
  tool: string
  matcher: RuleMatcher
}

export interface RuleSource {
  allow: readonly string[]
  ask: readonly string[]
  deny: readonly string[]
}

/** Which tool names a rule may name: the catalog's, and `<server>__<tool>` of configured MCP servers. */
export interface KnownTools {
  has: (name: string) => boolean
  mcpServers: ReadonlySet<string>
}

export class RuleError extends Error {}

const FILE_TOOLS = new Set(['file_read', 'file_write'])
const RULE_SHAPE = /^([A-Za-z0-9_.-]+)(?:\((.*)\))?$/s

export function parseRule (text: string, list: RuleList, known: KnownTools): PermissionRule {
  const match = RULE_SHAPE.exec(text.trim())
  if (match === null) throw new RuleError(`${JSON.stringify(text)} is not "tool" or "tool(specifier)"`)
  const tool = match[1] as string
  const spec = match[2]
  if (!isKnownTool(tool, known)) throw new RuleError(`${JSON.stringify(text)} names an unknown tool ${JSON.stringify(tool)}`)
  if (spec === undefined || spec.trim() === '*') return { text, list, tool, matcher: { kind: 'tool' } }
  if (spec.trim() === '') throw new RuleError(`${JSON.stringify(text)} has an empty specifier`)
  return { text, list, tool, matcher: specifierMatcher(text, tool, spec.trim()) }
}

function isKnownTool (tool: string, known: KnownTools): boolean {
  if (known.has(tool)) return true
  const split = tool.indexOf('__')
  return split > 0 && split < tool.length - 2 && known.mcpServers.has(tool.slice(0, split))
}

function specifierMatcher (text: string, tool: string, spec: string): RuleMatcher {
  if (tool === 'shell') {
    const prefix = spec.endsWith(':*')
    const words = (prefix ? spec.slice(0, -2) : spec).trim().split(/\s+/)
    if (words.some((w) => w === '' || /[\s'"`$\\;&|<>(){}*?[\]]/.test(w))) {
      throw new RuleError(`${JSON.stringify(text)}: a shell rule is plain words, optionally ending in ":*" (no quotes, globs or shell syntax)`)
    }
    return prefix ? { kind: 'shell_prefix', words } : { kind: 'shell_exact', words }
  }
  if (FILE_TOOLS.has(tool)) {
    if (spec.startsWith('/') || spec.split('/').includes('..')) throw new RuleError(`${JSON.stringify(text)}: a file rule is a workspace-relative glob`)
    return { kind: 'path', pattern: globPattern(spec) }
  }
  if (tool === 'http_request') {
    const domain = /^domain:([A-Za-z0-9*][A-Za-z0-9.-]*)$/.exec(spec)?.[1]
    if (domain === undefined) throw new RuleError(`${JSON.stringify(text)}: an http_request rule is "http_request(domain:HOST)"`)
    return { kind: 'domain', domain: domain.toLowerCase() }
  }
  throw new RuleError(`${JSON.stringify(text)}: ${tool} takes no specifier (write just "${tool}")`)
}

/** `**` any run of path segments, `*` and `?` within one segment; everything else literal. */
function globPattern (glob: string): RegExp {
  let out = ''
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i] as string
    if (ch === '*' && glob[i + 1] === '*') {
      const slash = glob[i + 2] === '/'
      out += slash ? '(?:.*/)?' : '.*'
      i += slash ? 2 : 1
    } else if (ch === '*') {
      out += '[^/]*'
    } else if (ch === '?') {
      out += '[^/]'
    } else {
      out += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&')
    }
  }
  return new RegExp(`^${out}$`, 's')
}

export function compileRules (source: RuleSource, known: KnownTools): PermissionRule[] {
  const rules: PermissionRule[] = []
  for (const list of ['deny', 'ask', 'allow'] as const) {
    for (const text of source[list]) rules.push(parseRule(text, list, known))
  }
  return rules
}

/** The policy version: a hash of the effective rules and mode, so a decision says which policy made it. */
export function policyVersion (source: RuleSource, mode: string): string {
  const canonical = JSON.stringify({ mode, allow: [...source.allow].sort(), ask: [...source.ask].sort(), deny: [...source.deny].sort() })
  return `sha256:${createHash('sha256').update(canonical).digest('hex').slice(0, 16)}`
}

/**
 * A simple command against a shell rule. Deny and ask rules match the program's base name
 * (`/bin/rm` is `rm`) and take a run-time word for anything, so they can only catch more; allow
 * rules need every word literal and the name exactly as written.
 */
export function matchesCommand (rule: PermissionRule, command: PlannedCommand): boolean {
  const { matcher } = rule
  if (matcher.kind === 'tool') return true
  if (matcher.kind !== 'shell_exact' && matcher.kind !== 'shell_prefix') return false
  const strict = rule.list === 'allow'
  const words = command.words
  if (matcher.kind === 'shell_exact' ? words.length !== matcher.words.length : words.length < matcher.words.length) return false
  return matcher.words.every((expected, i) => {
    const word = words[i] ?? null
    if (word === null) return !strict
    if (i === 0 && !strict) return word === expected || posix.basename(word) === expected
    return word === expected
  })
}

/** A file tool's path, workspace-relative and normalised; null when it leaves the workspace. */
export function workspacePath (path: unknown): string | null {
  if (typeof path !== 'string' || path === '') return null
  const normal = posix.normalize(path.replace(/^\.\/+/, ''))
  if (normal.startsWith('/') || normal === '..' || normal.startsWith('../')) return null
  return normal
}

/** Whether a non-shell call matches: a path rule needs a path inside the workspace, a domain rule the URL's host. */
export function matchesCall (rule: PermissionRule, args: Record<string, unknown>): boolean {
  const { matcher } = rule
  switch (matcher.kind) {
    case 'tool':
      return true
    case 'path': {
      const path = workspacePath(args.path)
      // Deny and ask rules also catch a path the allow side could not read.
      if (path === null) return rule.list !== 'allow'
      return matcher.pattern.test(path)
    }
    case 'domain': {
      const host = hostOf(args.url)
      if (host === null) return rule.list !== 'allow'
      return matcher.domain.startsWith('*.') ? host.endsWith(matcher.domain.slice(1)) : host === matcher.domain
    }
    default:
      return false
  }
}

function hostOf (url: unknown): string | null {
  if (typeof url !== 'string' || !URL.canParse(url)) return null
  return new URL(url).hostname.toLowerCase()
}
