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

export interface CallSpending {
  /**
   * Reserves `worstCaseUsd` against every budget of the turn, or throws a `TurnFailure`
   * (`BUDGET_EXCEEDED`) when one would be exceeded and nobody raised it.
   */
  reserve (worstCaseUsd: number): Promise<SpendReservation>
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
