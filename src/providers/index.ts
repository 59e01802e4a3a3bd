import type { Config } from '../core/config.js'
import { DemoProvider } from './demo.js'
import { OpenAIProvider } from './openai.js'
import type { ModelProvider } from './types.js'

/** Builds every configured provider once; agents share them by name. */
export function createProviders (config: Config, env: NodeJS.ProcessEnv): Map<string, ModelProvider> {
  const providers = new Map<string, ModelProvider>()
  for (const [name, p] of Object.entries(config.providers)) {
    if (p.kind === 'demo') {
      providers.set(name, new DemoProvider({ name, stepDelayMs: p.step_delay_ms }))
    } else {
      const apiKey = p.api_key_env === undefined ? undefined : env[p.api_key_env]
      providers.set(name, new OpenAIProvider({ name, config: p, apiKey }))
    }
  }
  return providers
}
