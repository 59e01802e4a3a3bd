/**
 * Provider request assembly for one iteration: which tool specs are effective, whether they go
 * on the wire (native) or into the prompt (text protocol), and the one leading system message.
 */
import type { ChatMessage } from '../providers/types.js'
import { TOOL_SEARCH } from '../tools/scope/activated.js'
import type { ToolSpec } from '../tools/contract.js'
import type { ResolvedAgentExecution } from './context.js'
import { buildToolProtocolInstructions } from './text-protocol/index.js'

export const RECEIPTS_ADDENDUM = [
  '## Tool Execution Receipts',
  'Every successful tool result ends with a `[receipt: ...]` field: an HMAC signature the gateway computed over the call and its output.',
  'When you refer to a tool result, quote its receipt verbatim. Never modify, omit or invent a receipt; a missing or invalid receipt marks a tool call that did not happen.'
].join('\n')

/**
 * Static registry specs (shared array) followed by tools activated earlier in the turn, minus
 * excluded names. Rebuilt each iteration so tool_search activations appear in the next one.
 */
export function iterationSpecs (exec: ResolvedAgentExecution): readonly ToolSpec[] {
  const base = exec.registry.specs()
  if (exec.activated === null) return base
  const seen = new Set(base.map((s) => s.name))
  const extra = exec.activated.list().filter((t) => !seen.has(t.name) && !exec.registry.isExcluded(t.name)).map((t) => t.spec)
  return extra.length === 0 ? base : [...base, ...extra]
}

export interface IterationRequest {
  specs: readonly ToolSpec[]
  useNative: boolean
  messages: ChatMessage[]
}

/** `withTools: false` is the final-summary request at the iteration cap: nothing may be called. */
export function buildIterationRequest (
  exec: ResolvedAgentExecution, history: readonly ChatMessage[], systemNotes: readonly string[], withTools = true
): IterationRequest {
  const specs = withTools ? iterationSpecs(exec) : []
  const useNative = exec.model.provider.nativeTools && specs.length > 0
  const sections = [exec.systemPrompt]
  // Strict parsing executes native calls only, so a text-only provider is not taught the protocol
  // nor told about tools it could only fetch through it.
  const describeTools = useNative || !exec.knobs.strictToolParsing
  // The section is only true while tool_search is on offer (per-run exclude can take it away).
  if (describeTools && exec.deferred !== null && specs.some((s) => s.name === TOOL_SEARCH)) sections.push(exec.deferred.section)
  if (!useNative && specs.length > 0 && !exec.knobs.strictToolParsing) sections.push(buildToolProtocolInstructions(specs))
  if (exec.receipts?.injectSystemPrompt === true) sections.push(RECEIPTS_ADDENDUM)
  sections.push(...systemNotes)
  const system = sections.filter((s) => s.trim() !== '').join('\n\n')
  return { specs, useNative, messages: [{ role: 'system', content: system }, ...history] }
}
