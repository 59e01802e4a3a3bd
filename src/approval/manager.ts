/**
 * Approval policy for one agent in one session: which tools need an operator, plus the
 * session allowlist that `always` answers grow. Fresh per session; grants never move between
 * agents or sessions.
 */
import type { RiskProfileConfig } from '../../schemas/config.js'

export type ApprovalRequirement = 'prompt' | 'approved' | 'not_required'

export class ApprovalManager {
  private readonly level: RiskProfileConfig['level']
  private readonly autoApprove: ReadonlySet<string>
  private readonly alwaysAsk: ReadonlySet<string>
  private readonly allowlist: Set<string>

  /** `allowlist` is the session's own set, shared so `always` survives into later turns. */
  constructor (profile: RiskProfileConfig, allowlist: Set<string>) {
    this.level = profile.level
    this.autoApprove = new Set(profile.auto_approve)
    this.alwaysAsk = new Set(profile.always_ask)
    this.allowlist = allowlist
  }

  /** First match wins: full → approved; readonly → not required; always_ask; auto_approve; session allowlist; else prompt. */
  requirement (tool: string): ApprovalRequirement {
    if (this.level === 'full') return 'approved'
    if (this.level === 'readonly') return 'not_required'
    if (this.alwaysAsk.has('*') || this.alwaysAsk.has(tool)) return 'prompt'
    if (this.autoApprove.has('*') || this.autoApprove.has(tool)) return 'approved'
    if (this.allowlist.has(tool)) return 'approved'
    return 'prompt'
  }

  needsApproval (tool: string): boolean {
    return this.requirement(tool) === 'prompt'
  }

  grantAlways (tool: string): void {
    this.allowlist.add(tool)
  }

  alwaysAllowed (): string[] {
    return [...this.allowlist].sort()
  }
}
