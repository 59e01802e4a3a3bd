/**
 * Tool hooks, supplied programmatically when the gateway is embedded (buildServer({ hooks })).
 * before_tool_call hooks run in descending priority and may rewrite or cancel a call;
 * after_tool_call hooks observe executed calls only and cannot change results.
 */
export interface HookCall {
  name: string
  arguments: Record<string, unknown>
  turnId: string
  sessionId: string
  agent: string
}

export type BeforeToolCallDecision =
  | { action: 'continue', name?: string, arguments?: Record<string, unknown> }
  | { action: 'cancel', reason: string }

export interface BeforeToolCallHook {
  name: string
  priority?: number
  run (call: HookCall): BeforeToolCallDecision | Promise<BeforeToolCallDecision>
}

export interface AfterToolCallInfo extends HookCall {
  callId: string
  success: boolean
  output: string
  error: string | null
  durationMs: number
}

export interface AfterToolCallHook {
  name: string
  run (info: AfterToolCallInfo): void | Promise<void>
}

export interface ToolHooks {
  before: readonly BeforeToolCallHook[]
  after: readonly AfterToolCallHook[]
}

export const NO_HOOKS: ToolHooks = Object.freeze({ before: [], after: [] })

export function sortedBeforeHooks (hooks: ToolHooks): BeforeToolCallHook[] {
  return [...hooks.before].sort((a, b) => (b.priority ?? 0) - (a.priority ?? 0))
}
