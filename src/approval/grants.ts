/**
 * The session's `always` grants. `always` on most tools allows the tool for the rest of the
 * session; on `shell` it allows only the exact command answered (whitespace outside quotes
 * normalised), because one harmless command must not stand for every later one.
 */
import type { ApprovalGrant } from '../../schemas/session.js'

/** Tools whose `always` grants the exact command rather than the tool. */
export const COMMAND_GRANT_TOOLS: ReadonlySet<string> = new Set(['shell'])

export class SessionGrants {
  private readonly tools = new Set<string>()
  private readonly commands = new Map<string, Set<string>>()

  /**
   * `stored` is the session record's list; a bare string is a tool grant of a record written
   * before command grants existed. A tool-wide grant of a command tool is dropped: no answer can
   * give one any more, and honouring an old one would keep the blanket grant alive.
   */
  constructor (stored: ReadonlyArray<ApprovalGrant | string> = []) {
    for (const entry of stored) {
      const grant = typeof entry === 'string' ? { tool: entry } : entry
      if (grant.command !== undefined) this.addCommand(grant.tool, grant.command)
      else if (!COMMAND_GRANT_TOOLS.has(grant.tool)) this.tools.add(grant.tool)
    }
  }

  allows (tool: string, args: Record<string, unknown>): boolean {
    if (!COMMAND_GRANT_TOOLS.has(tool)) return this.tools.has(tool)
    const command = commandOf(args)
    return command !== null && this.commands.get(tool)?.has(normalizeCommand(command)) === true
  }

  /** Whether one simple command of a parsed plan has its own grant. */
  allowsCommand (tool: string, command: string): boolean {
    return this.commands.get(tool)?.has(normalizeCommand(command)) === true
  }

  /** A grant of one simple command of a parsed plan. */
  grantCommand (tool: string, command: string): void {
    this.addCommand(tool, command)
  }

  /** A grant for the call answered `always`; a command tool's call without a command grants nothing. */
  grant (tool: string, args: Record<string, unknown>): void {
    if (!COMMAND_GRANT_TOOLS.has(tool)) {
      this.tools.add(tool)
      return
    }
    const command = commandOf(args)
    if (command !== null) this.addCommand(tool, command)
  }

  private addCommand (tool: string, command: string): void {
    let set = this.commands.get(tool)
    if (set === undefined) {
      set = new Set()
      this.commands.set(tool, set)
    }
    set.add(normalizeCommand(command))
  }

  /** Tool grants, then command grants; each group sorted, so the stored list is stable. */
  list (): ApprovalGrant[] {
    const tools = [...this.tools].sort().map((tool) => ({ tool }))
    const commands = [...this.commands].sort(([a], [b]) => a.localeCompare(b))
      .flatMap(([tool, set]) => [...set].sort().map((command) => ({ tool, command })))
    return [...tools, ...commands]
  }
}

function commandOf (args: Record<string, unknown>): string | null {
  return typeof args.command === 'string' ? args.command : null
}

/**
 * Leading and trailing blanks dropped and runs of spaces and tabs outside quotes made one space.
 * Blanks inside quotes or escaped with a backslash are part of an argument and stay; so do line
 * breaks, which separate commands.
 */
export function normalizeCommand (command: string): string {
  let out = ''
  let quote: '"' | '\'' | null = null
  let pendingBlank = false
  for (let i = 0; i < command.length; i++) {
    const ch = command[i] as string
    if (quote === null && (ch === ' ' || ch === '\t')) {
      pendingBlank = out !== ''
      continue
    }
    if (pendingBlank) {
      out += ' '
      pendingBlank = false
    }
    out += ch
    if (quote === null && ch === '\\' && i + 1 < command.length) {
      out += command[++i] as string
    } else if (quote === '"' && ch === '\\' && i + 1 < command.length) {
      out += command[++i] as string
    } else if (quote === null && (ch === '"' || ch === '\'')) {
      quote = ch
    } else if (quote === ch) {
      quote = null
    }
  }
  return out
}
