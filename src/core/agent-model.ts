/**
 * Which model an agent's requests name. Read by the engine's model binding and by the metrics
 * that label model calls, so it lives below both.
 */
import type { AgentConfig, Config } from '../../schemas/config.js'
import { ownEntry } from './json/own.js'

/** The agent's own model, else its provider's default. */
export function modelNameFor (config: Config, agent: AgentConfig): string {
  return agent.model ?? ownEntry(config.providers, agent.provider)?.model ?? 'default'
}
