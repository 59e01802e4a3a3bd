/**
 * `needs_approval` of an HTTP tool as the tool contract's approval condition. `{ when = … }` is a
 * JSON Logic expression (json-logic-engine: no global operator table, no method calls on data),
 * compiled once at start so an unknown operator stops the gateway instead of every call.
 */
import { LogicEngine } from 'json-logic-engine'
import type { ApprovalCondition } from '../contract.js'
import type { HttpToolConfig } from '../../../schemas/http-tools.js'

export class ConditionError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'ConditionError'
  }
}

function describe (err: unknown): string {
  if (err instanceof Error) return err.message
  if (typeof err === 'object' && err !== null && 'type' in err) {
    const { type, key } = err as { type: unknown, key?: unknown }
    return key === undefined ? String(type) : `${String(type)} ${JSON.stringify(key)}`
  }
  return String(err)
}

/** The declaration's answer as a condition on the arguments: true asks. */
export function approvalCondition (approval: HttpToolConfig['needs_approval']): ApprovalCondition {
  if (approval === 'always') return () => true
  if (approval === 'never') return () => false
  let run: (data: unknown) => unknown
  try {
    run = new LogicEngine().build(approval.when) as (data: unknown) => unknown
  } catch (err) {
    throw new ConditionError(`needs_approval.when is not a JSON Logic expression Tollgate can run: ${describe(err)}`)
  }
  // Only a plain `true` or `false` answers; anything else asks (and so does a failure, in the gate).
  return (args) => run(args) !== false
}
