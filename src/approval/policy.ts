/**
 * Approval policy for one agent in one session: which calls need an operator, plus the
 * session's `always` grants. Fresh per session; grants never move between agents or sessions.
 */
import type { RiskProfileConfig } from '../../schemas/config.js'
import type { ApprovalGrant } from '../../schemas/session.js'
import type { SessionGrants } from './grants.js'

export type ApprovalRequirement = 'prompt' | 'approved' | 'not_required'

export class ApprovalManager {
  private readonly level: RiskProfileConfig['level']
  private readonly autoApprove: ReadonlySet<string>
  private readonly alwaysAsk: ReadonlySet<string>
  private readonly grants: SessionGrants

  /** `grants` is the session's own set, shared so `always` survives into later turns. */
  constructor (profile: RiskProfileConfig, grants: SessionGrants) {
    this.level = profile.level
    this.autoApprove = new Set(profile.auto_approve)
    this.alwaysAsk = new Set(profile.always_ask)
    this.grants = grants
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
    return this.requirement(tool, args) === 'prompt'
  }

  /** The call answered `always`: its tool, or for `shell` its exact command. */
  grantAlways (tool: string, args: Record<string, unknown>): void {
    this.grants.grant(tool, args)
  }

  alwaysAllowed (): ApprovalGrant[] {
    return this.grants.list()
  }
}
