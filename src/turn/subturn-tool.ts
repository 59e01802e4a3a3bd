/**
 * `delegate`: hands a self-contained task to a sub-turn (the same agent, or one listed in
 * `agents.<x>.delegate_agents`) with a narrowed tool set, and returns the sub-turn's answer with
 * a summary of the tool calls it made. The sub-turn streams nothing of its own to the parent's
 * clients except approval requests, which go through the parent's backchannel.
 */
import { isTurnScope } from './context.js'
import { runToolLoop, type TurnOutcome } from './loop.js'
import { defineTool, fail, type Tool, type ToolResult } from '../tools/contract.js'
import { DELEGATE, deriveSubTurn, type DelegateDeps, type SubTurn } from './subturn.js'

export const MAX_TASK_CHARS = 20_000
export const MAX_TOOL_NAMES = 64

function summary (agent: string, outcome: TurnOutcome, sub: SubTurn): string {
  const calls = sub.calls.length === 0 ? 'no tool calls' : `tool calls: ${sub.calls.map((c) => `${c.name} ${c.status}`).join(', ')}`
  return `[delegated to ${agent}: ${outcome.status}, ${sub.state.iteration} iteration(s); ${calls}]`
}

function result (agent: string, outcome: TurnOutcome, sub: SubTurn): ToolResult {
  const data = {
    agent,
    status: outcome.status,
    iterations: sub.state.iteration,
    tool_calls: sub.calls.map((c) => ({ name: c.name, status: c.status, success: c.success }))
  }
  const line = summary(agent, outcome, sub)
  if (outcome.status === 'completed') {
    const text = outcome.finalText.trim() === '' ? line : `${outcome.finalText}\n\n${line}`
    return { success: true, output: text, error: null, data }
  }
  const why = outcome.status === 'failed' ? `the delegated turn failed (${outcome.code}): ${outcome.message}` : 'the delegated turn was cancelled'
  return { success: false, output: '', error: `${why} ${line}`, data }
}

export function createDelegateTool (deps: DelegateDeps): Tool {
  return defineTool<{ agent?: string, task: string, tools?: string[] }>({
    name: DELEGATE,
    description: 'Hand a self-contained sub-task to a sub-agent and get its final answer back. ' +
      'The sub-agent starts fresh: put everything it needs into `task`. `tools` limits which of your current tools it may use (default: all of them).',
    parameters: {
      type: 'object',
      properties: {
        agent: { type: 'string', minLength: 1, maxLength: 64, description: 'Agent to delegate to; default: yourself' },
        task: { type: 'string', minLength: 1, maxLength: MAX_TASK_CHARS, description: 'The complete task description' },
        tools: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 128 }, maxItems: MAX_TOOL_NAMES, description: 'Names of your tools the sub-agent may use' }
      },
      required: ['task']
    },
    turnScoped: true,
    // Delegating changes nothing by itself: every call of the sub-turn passes the same approval
    // manager (the parent's risk profile and session grants), read-only check included.
    effects: 'read',
    async execute (args, ctx) {
      if (ctx.turn === undefined || !isTurnScope(ctx.turn)) return fail('delegate can only run inside a turn')
      const sub = deriveSubTurn(deps, ctx.turn, args, ctx)
      if ('error' in sub) return fail(`delegate: ${sub.error}`)
      const outcome = await runToolLoop(sub.exec, sub.state)
      return result(sub.exec.agent, outcome, sub)
    }
  })
}
