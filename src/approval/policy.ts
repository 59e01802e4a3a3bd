/**
 * Approval policy for one agent in one session: which calls need an operator, plus the
 * session's `always` grants. Fresh per session; grants never move between agents or sessions.
 */
import type { RiskProfileConfig } from '../../schemas/config.js'
import type { ApprovalGrant } from '../../schemas/session.js'
import type { SessionGrants } from './grants.js'
import { decidePermission, type PermissionDecision, type ProfilePermissions } from './permissions.js'

export type ApprovalRequirement = 'prompt' | 'approved' | 'not_required'

/** What the gate does with one call: the requirement, or `denied` by a rule, and the rule decision behind it. */
export interface GateVerdict {
  requirement: ApprovalRequirement | 'denied'
  /** The permission rules' decision; null when the profile has no rules. */
  permission: PermissionDecision | null
  /** The profile runs its rules in shadow: `permission` was logged and counted, `requirement` is the old one. */
  shadow: boolean
}

export class ApprovalManager {
  private readonly level: RiskProfileConfig['level']
  private readonly autoApprove: ReadonlySet<string>
  private readonly alwaysAsk: ReadonlySet<string>
  private readonly grants: SessionGrants
  private readonly permissions: ProfilePermissions | null

  /**
   * `grants` is the session's own set, shared so `always` survives into later turns;
   * `permissions` the profile's compiled rules (null: it has none).
   */
  constructor (profile: RiskProfileConfig, grants: SessionGrants, permissions: ProfilePermissions | null = null) {
    this.level = profile.level
    this.autoApprove = new Set(profile.auto_approve)
    this.alwaysAsk = new Set(profile.always_ask)
    this.grants = grants
    this.permissions = permissions
  }

  /**
   * The gate's verdict: deny > ask > allow rules > the profile's other settings (`requirement`).
   * In shadow mode the rules' decision is reported but `requirement` stands.
   */
  verdict (tool: string, args: Record<string, unknown>): GateVerdict {
    const old = this.requirement(tool, args)
    if (this.permissions === null) return { requirement: old, permission: null, shadow: false }
    const permission = decidePermission(this.permissions, tool, args, (command) => this.grants.allowsCommand(tool, command))
    if (this.permissions.mode === 'shadow') return { requirement: old, permission, shadow: true }
    switch (permission.outcome) {
      case 'deny':
        return { requirement: 'denied', permission, shadow: false }
      case 'ask':
        return { requirement: 'prompt', permission, shadow: false }
      case 'allow':
        return { requirement: 'approved', permission, shadow: false }
      case 'default':
        return { requirement: old, permission, shadow: false }
    }
  }

  /** `level = "readonly"`: only calls whose effect is `read` may run (`src/approval/read-only.ts`). */
  get readOnly (): boolean {
    return this.level === 'readonly'
  }

  /**
   * First match wins: full → approved; readonly → not required (side-effecting calls are refused
   * before this is asked); always_ask; auto_approve; session grants; else prompt. Without `args`
   * (a tool listing) a command grant cannot apply.
   */
  requirement (tool: string, args: Record<string, unknown> = {}): ApprovalRequirement {
    if (this.level === 'full') return 'approved'
    if (this.level === 'readonly') return 'not_required'
    if (this.alwaysAsk.has('*') || this.alwaysAsk.has(tool)) return 'prompt'
    if (this.autoApprove.has('*') || this.autoApprove.has(tool)) return 'approved'
    if (this.grants.allows(tool, args)) return 'approved'
    return 'prompt'
  }

  /** Why a prompt-required call is asked about: the rule of `requirement` that chose `prompt`, in words. */
  promptReason (tool: string): string {
    if (this.alwaysAsk.has('*')) return 'The risk profile asks about every tool call (always_ask = ["*"]).'
    if (this.alwaysAsk.has(tool)) return `The risk profile always asks about '${tool}' (listed in always_ask).`
    return `'${tool}' is not auto-approved by the risk profile (level "supervised", not in auto_approve) ` +
      'and has no "always" grant in this session.'
  }

  /** An explicit rule asks about this tool (always_ask), as opposed to the supervised default. */
  asksExplicitly (tool: string): boolean {
    return this.alwaysAsk.has('*') || this.alwaysAsk.has(tool)
  }

  needsApproval (tool: string, args: Record<string, unknown>): boolean {
    return this.verdict(tool, args).requirement === 'prompt'
  }

  /**
   * The call answered `always`: its tool, or for `shell` its exact command; under enforced rules
   * the plan's simple commands, never more (a command with a hazard grants nothing).
   */
  grantAlways (tool: string, args: Record<string, unknown>, permission: PermissionDecision | null = null): void {
    if (permission?.plan !== undefined && this.permissions?.mode === 'enforce') {
      for (const command of permission.grantable ?? []) this.grants.grantCommand(tool, command)
      return
    }
    this.grants.grant(tool, args)
  }

  alwaysAllowed (): ApprovalGrant[] {
    return this.grants.list()
  }
}
