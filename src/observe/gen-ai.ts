/**
 * The gateway's words mapped onto the OpenTelemetry GenAI semantic conventions' values, in one
 * place, so spans (and anything else that speaks the conventions) agree.
 */
import type { ObservedToolProvenance } from './observer.js'

/**
 * `gen_ai.provider.name`: the conventions' well-known value where one exists. An OpenAI-compatible
 * endpoint is `openai` even when another product serves it, as the conventions ask of clients
 * that cannot know better (so is the Responses API); Anthropic's Messages API is `anthropic`; the
 * in-process demo provider gets a `tollgate.`-namespaced value.
 */
export function genAiProviderName (providerKind: string): string {
  if (providerKind === 'openai' || providerKind === 'openai-responses') return 'openai'
  return providerKind === 'anthropic' ? 'anthropic' : `tollgate.${providerKind}`
}

/**
 * `gen_ai.tool.type`: built-in tools are functions the runtime itself executes on the model's
 * parameters (`function`); MCP tools bridge to an external server the gateway calls (`extension`).
 */
export function genAiToolType (provenance: ObservedToolProvenance): 'function' | 'extension' {
  return provenance === 'extension' ? 'extension' : 'function'
}
