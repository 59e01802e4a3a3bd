import type { Config } from '../core/config.js'
import { AnthropicProvider } from './anthropic.js'
import { DemoProvider } from './demo.js'
import { ResponsesProvider } from './openai-responses.js'
import { OpenAIProvider } from './openai.js'
import type { ModelProvider } from './types.js'

/** Builds every configured provider once; agents share them by name. */
export function createProviders (config: Config, env: NodeJS.ProcessEnv): Map<string, ModelProvider> {
  const providers = new Map<string, ModelProvider>()
  for (const [name, p] of Object.entries(config.providers)) {
    if (p.kind === 'demo') {
      providers.set(name, new DemoProvider({ name, stepDelayMs: p.step_delay_ms }))
      continue
    }
    const apiKey = p.api_key_env === undefined ? undefined : env[p.api_key_env]
    if (p.kind === 'anthropic') providers.set(name, new AnthropicProvider({ name, config: p, apiKey }))
    else if (p.kind === 'openai-responses') providers.set(name, new ResponsesProvider({ name, config: p, apiKey }))
    else providers.set(name, new OpenAIProvider({ name, config: p, apiKey }))
  }
  return providers
}
