/**
 * What one model call cost, from its provider-reported usage and the configured prices
 * (`providers.<p>.pricing`). A call is priced only when both a price and its usage are known:
 * an unknown cost is `null`, never 0, so a sum over calls is never silently low.
 */
import type { ModelPrice, ProviderPricing } from '../../schemas/config.js'

export type { ModelPrice }
import type { ChatUsage } from './types.js'

const PER_TOKEN = 1 / 1_000_000

/** The price of `model` at a provider: its own entry, else the provider-wide one when it is complete. */
export function priceFor (pricing: ProviderPricing | undefined, model: string): ModelPrice | null {
  if (pricing === undefined) return null
  const own = pricing.models === undefined ? undefined : Object.hasOwn(pricing.models, model) ? pricing.models[model] : undefined
  if (own !== undefined) return own
  const { input_usd_per_mtok: input, output_usd_per_mtok: output } = pricing
  if (input === undefined || output === undefined) return null
  return {
    input_usd_per_mtok: input,
    output_usd_per_mtok: output,
    ...(pricing.cached_input_usd_per_mtok === undefined ? {} : { cached_input_usd_per_mtok: pricing.cached_input_usd_per_mtok }),
    ...(pricing.reasoning_usd_per_mtok === undefined ? {} : { reasoning_usd_per_mtok: pricing.reasoning_usd_per_mtok })
  }
}

/**
 * USD of one answered call. Cached input tokens are part of the input count and reasoning tokens
 * part of the output count (as OpenAI reports them); each is charged at its own rate when one is set.
 */
export function costOf (price: ModelPrice | null, usage: ChatUsage | undefined): number | null {
  if (price === null || usage === undefined) return null
  const cached = Math.min(usage.cache_read_tokens ?? 0, usage.input_tokens)
  const reasoning = Math.min(usage.reasoning_tokens ?? 0, usage.output_tokens)
  const input = (usage.input_tokens - cached) * price.input_usd_per_mtok +
    cached * (price.cached_input_usd_per_mtok ?? price.input_usd_per_mtok)
  const output = (usage.output_tokens - reasoning) * price.output_usd_per_mtok +
    reasoning * (price.reasoning_usd_per_mtok ?? price.output_usd_per_mtok)
  return roundUsd((input + output) * PER_TOKEN)
}

/** Worst case of a call before it is made: every estimated input token and `maxOutput` output tokens at full price. */
export function worstCaseOf (price: ModelPrice, inputTokens: number, maxOutput: number): number {
  const outputRate = Math.max(price.output_usd_per_mtok, price.reasoning_usd_per_mtok ?? 0)
  return roundUsd((inputTokens * price.input_usd_per_mtok + maxOutput * outputRate) * PER_TOKEN)
}

/** Sums of many calls drift in binary floating point; twelve decimals (a micro-cent's millionth) are plenty. */
export function roundUsd (usd: number): number {
  return Math.round(usd * 1e12) / 1e12
}
