/**
 * Model fallback (`agents.<a>.fallback_providers`): a call that failed with a retryable error,
 * after its provider's own retries, and before any text or reasoning streamed, goes to the next
 * provider in order. Each switch is a `model.fallback` event; the provider that answered is
 * recorded on the turn.
 */
import { scrubText } from '../core/security/redact.js'
import { ProviderError, type ChatResponse } from '../providers/types.js'
import type { ModelBinding, ResolvedAgentExecution, TurnState } from './context.js'

/** One provider's try at the call: what it falls back from, and whether anything streamed. */
export interface ProviderAttempt {
  fallbackFrom?: string
  streamed: boolean
}

export async function withFallback (
  exec: ResolvedAgentExecution, state: TurnState, call: (binding: ModelBinding, attempt: ProviderAttempt) => Promise<ChatResponse>
): Promise<ChatResponse> {
  const bindings = [exec.model, ...(exec.model.fallbacks ?? [])]
  let from: string | undefined
  for (const [i, binding] of bindings.entries()) {
    const attempt: ProviderAttempt = { streamed: false, ...(from === undefined ? {} : { fallbackFrom: from }) }
    try {
      return await call(binding, attempt)
    } catch (err) {
      const next = bindings[i + 1]
      // Text already shown cannot be taken back, and a second model would say it again.
      if (next === undefined || attempt.streamed || state.signal.aborted || !(err instanceof ProviderError) || !err.retryable) throw err
      from = binding.provider.name
      const reason = scrubText(err.message)
      state.log.warn({ provider: from, fallback: next.provider.name, code: err.code, reason }, 'falling back to the next provider')
      state.emit({ kind: 'model.fallback', from, to: next.provider.name, code: err.code, reason })
    }
  }
  throw new ProviderError('PROVIDER_ERROR', 'no provider to call')
}
