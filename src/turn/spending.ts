/**
 * The engine's side of budgets: before a model call the loop reserves the call's worst case and
 * after it settles the reservation to what the call really cost. How budgets are kept (the
 * store's spend ledger, which budgets apply, asking a person) is the service's business.
 */
import type { ChatMessage } from '../providers/types.js'
import type { ToolSpec } from '../tools/contract.js'

/** A reserved amount, settled exactly once. */
export interface SpendReservation {
  /** `cost`: what the call cost; null when unknown, which keeps the worst case spent. `made`: false when no call went out. */
  settle (cost: number | null, made: boolean): Promise<void>
}

/** A budget a call would pass: which, what it had spent, its limit and what the call was reserved at. */
export interface BudgetOverrun {
  budget: string
  spent_usd: number
  limit_usd: number
  call_usd: number
}

export interface CallSpending {
  /** fail: an overrun fails the turn; ask: a person may raise the budget (an approval of kind `budget`). */
  readonly onExceeded: 'fail' | 'ask'
  /** Reserves `worstCaseUsd` against every budget of the turn, or names the first it would pass (nothing reserved). */
  reserve (worstCaseUsd: number): Promise<SpendReservation | BudgetOverrun>
  /** A person allowed more: `budget` grows by its own configured size for the rest of this turn. */
  raise (budget: string): void
}

export function overrunText (o: BudgetOverrun): string {
  return `budget ${o.budget} exceeded: spent ${o.spent_usd} USD of ${o.limit_usd} USD; the next model call is reserved at ${o.call_usd} USD`
}

/**
 * Input tokens of a request before it is sent. Tollgate has no tokenizer: about four characters
 * make a token in the languages models are priced for, so this is an estimate the settlement corrects.
 */
export function estimateInputTokens (messages: readonly ChatMessage[], tools: readonly ToolSpec[]): number {
  let chars = 0
  for (const m of messages) {
    chars += (m.content?.length ?? 0) + 8
    for (const c of m.tool_calls ?? []) chars += c.name.length + c.arguments.length + 8
  }
  for (const t of tools) chars += JSON.stringify(t).length
  return Math.ceil(chars / 4)
}
