/**
 * Hard budgets (`budgets`, a turn request's `budget_usd`): which budgets a turn's model calls
 * are reserved against, the spend ledger keys they are kept under, and what happens when a call
 * would pass one — the turn fails with BUDGET_EXCEEDED, or (`on_exceeded = "ask"`) a person is
 * asked whether to raise that budget for this turn.
 */
import type { BudgetsConfig } from '../../schemas/config.js'
import { TollgateError } from '../core/errors.js'
import { fromNano, toNano, type SpendLedger, type SpendLine } from '../store/spend-ledger.js'
import type { CallSpending, SpendReservation } from '../turn/spending.js'

export type BudgetName = 'turn_usd' | 'session_usd' | 'tenant_daily_usd'

export interface TurnBudgetScope {
  budgets: BudgetsConfig
  ledger: SpendLedger
  tenant: string
  /** The session's `tenant/session` key. */
  session: string
  turnId: string
  /** The turn request's `budget_usd`, already checked to be within `turns_usd`. */
  requestedUsd?: number
}

const DAY_MS = 86_400_000
/** A turn's and a session's rows outlive any turn (a session may go on for weeks). */
const KEEP_MS = 90 * DAY_MS

/** The ledger key of a tenant's spending today (UTC), and when the day ends. */
export function tenantDay (tenant: string, now: number): { key: string, expiresMs: number } {
  const day = new Date(now).toISOString().slice(0, 10)
  return { key: `tenant:${tenant}:${day}`, expiresMs: Math.floor(now / DAY_MS) * DAY_MS + DAY_MS }
}

/**
 * A request's `budget_usd` may only lower the configured turn budget. Refused with
 * INVALID_REQUEST when it is higher.
 */
export function checkRequestedBudget (budgets: BudgetsConfig, requestedUsd: number | undefined): void {
  if (requestedUsd === undefined || budgets.turn_usd === undefined) return
  if (requestedUsd > budgets.turn_usd) {
    throw new TollgateError('INVALID_REQUEST', `budget_usd ${requestedUsd} is above the configured turn budget (budgets.turn_usd = ${budgets.turn_usd})`)
  }
}

/** New turns of a tenant whose daily budget is spent are refused at once (problem JSON BUDGET_EXCEEDED). */
export async function checkTenantBudget (budgets: BudgetsConfig, ledger: SpendLedger, tenant: string): Promise<void> {
  const limit = budgets.tenant_daily_usd
  if (limit === undefined) return
  const spent = fromNano(await ledger.spent(tenantDay(tenant, Date.now()).key))
  if (spent >= limit) {
    throw new TollgateError('BUDGET_EXCEEDED', `the tenant's daily budget is spent: ${spent} USD of tenant_daily_usd ${limit} USD today (UTC)`)
  }
}

interface Budget {
  name: BudgetName
  limitUsd: number
  /** Its ledger row at `now`: a tenant's day changes at midnight UTC. */
  lineAt: (now: number) => { key: string, expiresMs: number }
}

function budgetsOf (scope: TurnBudgetScope): Budget[] {
  const { budgets } = scope
  const out: Budget[] = []
  const turnLimit = scope.requestedUsd ?? budgets.turn_usd
  const kept = (key: string) => (now: number) => ({ key, expiresMs: now + KEEP_MS })
  if (turnLimit !== undefined) out.push({ name: 'turn_usd', limitUsd: turnLimit, lineAt: kept(`turn:${scope.turnId}`) })
  if (budgets.session_usd !== undefined) {
    out.push({ name: 'session_usd', limitUsd: budgets.session_usd, lineAt: kept(`session:${scope.session}`) })
  }
  if (budgets.tenant_daily_usd !== undefined) {
    // A call settles on the day it was reserved on, even when it ends after midnight.
    out.push({ name: 'tenant_daily_usd', limitUsd: budgets.tenant_daily_usd, lineAt: (now) => tenantDay(scope.tenant, now) })
  }
  return out
}

/** The model calls of one turn, reserved against every budget that applies; undefined when none does. */
export function turnSpending (scope: TurnBudgetScope): CallSpending | undefined {
  const budgets = budgetsOf(scope)
  if (budgets.length === 0) return undefined
  // What a person allowed this turn beyond each budget ("yes" to a budget approval).
  const raised = new Map<BudgetName, number>()
  const lineOf = (b: Budget, now: number): SpendLine => ({ ...b.lineAt(now), limitNano: toNano(b.limitUsd + (raised.get(b.name) ?? 0)) })
  return {
    onExceeded: scope.budgets.on_exceeded,
    async reserve (worstCaseUsd) {
      const amount = toNano(worstCaseUsd)
      const now = Date.now()
      const lines = budgets.map((b) => lineOf(b, now))
      const verdict = await scope.ledger.reserve(lines, amount)
      if (verdict.ok) return settlement(scope.ledger, lines.map((l) => l.key), amount)
      const budget = budgets[lines.findIndex((l) => l.key === verdict.key)] as Budget
      return { budget: budget.name, spent_usd: fromNano(verdict.spentNano), limit_usd: fromNano(verdict.limitNano), call_usd: worstCaseUsd }
    },
    raise (name) {
      const budget = budgets.find((b) => b.name === name)
      if (budget !== undefined) raised.set(budget.name, (raised.get(budget.name) ?? 0) + budget.limitUsd)
    }
  }
}

function settlement (ledger: SpendLedger, keys: readonly string[], reservedNano: number): SpendReservation {
  let settled = false
  return {
    async settle (cost, made) {
      if (settled) return
      settled = true
      // Unknown cost of a call that was made: the worst case stays spent.
      if (made && cost === null) return
      const delta = toNano(made ? cost ?? 0 : 0) - reservedNano
      if (delta !== 0) await ledger.adjust(keys, delta)
    }
  }
}
