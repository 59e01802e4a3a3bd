/**
 * The permission decision of one call under its risk profile's rules: deny > ask > allow > the
 * profile's defaults. A shell command is decided on its parsed plan: every simple command must be
 * allowed for the call to be allowed, one denied command denies it, and a hazard (substitution,
 * eval, redirection to a file, …) is never allowed by a rule. Each decision names the rule that
 * made it and the policy version, so people and the model can be told why (decision 0212).
 */
import { compileRules, matchesCall, matchesCommand, policyVersion, type KnownTools, type PermissionRule, type RuleSource } from './permission-rules.js'
import { HAZARD_REASONS, planShellCommand, type PlanHazard, type PlannedCommand } from './shell-plan.js'
import type { ShellSyntax } from './shell-parser.js'

export type PermissionsMode = 'enforce' | 'shadow'

/** The compiled rules of one risk profile. */
export interface ProfilePermissions {
  rules: readonly PermissionRule[]
  mode: PermissionsMode
  version: string
  syntax: ShellSyntax
}

export type PermissionOutcome = 'allow' | 'ask' | 'deny' | 'default'

/** `default`: no rule decided; the profile's existing defaults (level, auto_approve, grants) do. */
export const DEFAULT_RULE = 'default'
/** A command allowed by the session's `always` answer rather than a rule. */
export const GRANT_RULE = 'session grant'

export interface PlannedCommandDecision {
  command: string
  wrappers: string[]
  outcome: PermissionOutcome
  rule: string
}

export interface PermissionDecision {
  outcome: PermissionOutcome
  /** The rule as written that decided, `session grant`, or `default`. */
  rule: string
  /** Why, in words, for the person asked and the model refused. */
  reason: string
  policyVersion: string
  /** The parts of a shell command a person must answer for. */
  needs: string[]
  /** A shell call's parsed plan. */
  plan?: { commands: PlannedCommandDecision[], hazards: PlanHazard[] }
  /** The plan's simple commands (what `always` may grant); only when the plan has no hazard. */
  grantable?: string[]
}

export function compileProfilePermissions (
  source: RuleSource & { mode: PermissionsMode }, known: KnownTools, syntax: ShellSyntax
): ProfilePermissions | null {
  if (source.allow.length + source.ask.length + source.deny.length === 0 && source.mode === 'enforce') return null
  return { rules: compileRules(source, known), mode: source.mode, version: policyVersion(source, source.mode), syntax }
}

/** What a person is shown at most: a command of thousands of parts still makes a readable question. */
const MAX_NEEDS = 20

function bounded (needs: string[]): string[] {
  return needs.length <= MAX_NEEDS ? needs : [...needs.slice(0, MAX_NEEDS), `… and ${needs.length - MAX_NEEDS} more`]
}

function firstRule (
  rules: readonly PermissionRule[], list: PermissionRule['list'], test: (rule: PermissionRule) => boolean
): PermissionRule | undefined {
  return rules.find((rule) => rule.list === list && test(rule))
}

export function decidePermission (
  permissions: ProfilePermissions, tool: string, args: Record<string, unknown>, granted: (command: string) => boolean
): PermissionDecision {
  const rules = permissions.rules.filter((rule) => rule.tool === tool)
  if (tool === 'shell' && typeof args.command === 'string') return decideShell(permissions, rules, args.command, granted)
  const base = { policyVersion: permissions.version, needs: [] }
  for (const list of ['deny', 'ask', 'allow'] as const) {
    const rule = firstRule(rules, list, (r) => matchesCall(r, args))
    if (rule !== undefined) {
      const outcome = list
      return { ...base, outcome, rule: rule.text, reason: `${rule.text} is in the risk profile's ${list} rules` }
    }
  }
  return { ...base, outcome: 'default', rule: DEFAULT_RULE, reason: `no permission rule matches this '${tool}' call` }
}

function decideCommand (
  rules: readonly PermissionRule[], command: PlannedCommand, granted: (command: string) => boolean
): PlannedCommandDecision {
  const base = { command: command.text, wrappers: command.wrappers }
  for (const list of ['deny', 'ask', 'allow'] as const) {
    const rule = firstRule(rules, list, (r) => matchesCommand(r, command))
    if (rule !== undefined) return { ...base, outcome: list, rule: rule.text }
  }
  if (!command.words.includes(null) && granted(command.text)) return { ...base, outcome: 'allow', rule: GRANT_RULE }
  return { ...base, outcome: 'default', rule: DEFAULT_RULE }
}

function decideShell (
  permissions: ProfilePermissions, rules: readonly PermissionRule[], command: string, granted: (command: string) => boolean
): PermissionDecision {
  const plan = planShellCommand(permissions.syntax, command)
  const commands = plan.commands.map((c) => decideCommand(rules, c, granted))
  const base = { policyVersion: permissions.version, plan: { commands, hazards: plan.hazards } }
  const denied = commands.find((c) => c.outcome === 'deny')
  if (denied !== undefined) {
    return { ...base, outcome: 'deny', rule: denied.rule, needs: [], reason: `\`${denied.command}\` is denied by ${denied.rule}` }
  }
  if (plan.hazards.length > 0) {
    const needs = bounded(plan.hazards.map((h) => `${h.text}: ${HAZARD_REASONS[h.kind]}`))
    return { ...base, outcome: 'ask', rule: DEFAULT_RULE, needs, reason: `no rule can allow this command: ${needs.join('; ')}` }
  }
  const grantable = plan.commands.filter((c) => !c.words.includes(null)).map((c) => c.text)
  const asked = commands.find((c) => c.outcome === 'ask')
  if (asked !== undefined) {
    const needs = bounded(commands.filter((c) => c.outcome === 'ask').map((c) => `${c.command}: matches ${c.rule}`))
    return { ...base, outcome: 'ask', rule: asked.rule, needs, grantable, reason: `\`${asked.command}\` matches ${asked.rule}, which asks` }
  }
  const unmatched = commands.filter((c) => c.outcome === 'default')
  if (commands.length === 0) return { ...base, outcome: 'default', rule: DEFAULT_RULE, needs: [], reason: 'the command runs nothing' }
  if (unmatched.length > 0) {
    const needs = bounded(unmatched.map((c) => `${c.command}: no rule allows it`))
    const listed = bounded(unmatched.map((c) => `\`${c.command}\``)).join(', ')
    return { ...base, outcome: 'default', rule: DEFAULT_RULE, needs, grantable, reason: `not allowed by any rule: ${listed}` }
  }
  const deciding = commands.find((c) => c.rule !== GRANT_RULE) ?? commands[0]
  return {
    ...base,
    outcome: 'allow',
    rule: deciding?.rule ?? DEFAULT_RULE,
    needs: [],
    grantable,
    reason: `every command is allowed: ${bounded(commands.map((c) => `\`${c.command}\` by ${c.rule}`)).join(', ')}`
  }
}
