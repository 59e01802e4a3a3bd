/**
 * Feeds the tenant's audit chain from a turn's observer records: rule decisions, approval
 * decisions, tool executions and their receipts. The ledger chains them in the order they are
 * appended, so a turn's entries are chained in the order they happened; a failed append is
 * logged and never fails the turn.
 */
import type { Logger } from 'pino'
import { canonicalJson, digest } from '../core/json/canonical.js'
import type { Observer, ObserverEvent } from '../observe/observer.js'
import type { AuditDraft, AuditLedger } from '../store/audit-chain.js'

function draftOf (event: ObserverEvent): AuditDraft | null {
  switch (event.kind) {
    case 'permission':
      return {
        kind: 'permission',
        data: {
          turn_id: event.turn_id, session_id: event.session_id, call_id: event.call_id, tool: event.tool, rule: event.rule,
          outcome: event.outcome, mode: event.mode, policy_version: event.policy_version, requirement: event.requirement,
          reason: event.reason, ...(event.plan === undefined ? {} : { plan: event.plan })
        }
      }
    case 'approval':
      return {
        kind: 'approval',
        data: {
          turn_id: event.turn_id, session_id: event.session_id, call_id: event.call_id, tool: event.tool, request_id: event.request_id,
          decision: event.decision, decided_by: event.decided_by, approval_channel: event.approval_channel, principal: event.principal
        }
      }
    case 'tool_call':
      return {
        kind: 'tool_execution',
        data: {
          turn_id: event.turn_id, session_id: event.session_id, call_id: event.call_id, tool: event.tool, status: event.status,
          success: event.success,
          // What ran, provably, without keeping the arguments: their scrubbed canonical form's hash.
          arguments_sha256: digest(canonicalJson(event.arguments))
        }
      }
    case 'receipt':
      return {
        kind: 'receipt',
        data: { turn_id: event.turn_id, session_id: event.session_id, call_id: event.call_id, tool: event.tool, receipt: event.receipt }
      }
    default:
      return null
  }
}

export class AuditRecorder {
  private tail: Promise<void> = Promise.resolve()

  constructor (readonly ledger: AuditLedger, private readonly log: Logger) {}

  /** The turn's observer, which also appends the audited kinds to `tenant`'s chain. */
  observerFor (inner: Observer, tenant: string): Observer {
    return {
      record: (event) => {
        const draft = draftOf(event)
        if (draft !== null) this.append(tenant, draft)
        inner.record(event)
      }
    }
  }

  private append (tenant: string, draft: AuditDraft): void {
    // Not chained behind the previous append: the ledger keeps the order, and on SQLite the
    // entries of one tick share a commit (decision 0277).
    const appended = this.ledger.append(tenant, draft).then(() => {}, (err: unknown) => {
      this.log.error({ err, audit_kind: draft.kind }, 'could not append to the audit chain')
    })
    this.tail = this.tail.then(async () => { await appended })
  }

  /** Resolves once every entry recorded so far is in the chain (an export reads after this). */
  async settled (): Promise<void> {
    await this.tail
  }

  async close (): Promise<void> {
    await this.tail
    await this.ledger.close()
  }
}
