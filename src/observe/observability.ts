/**
 * The gateway's own observers, built once from config: structured log lines, Prometheus
 * metrics and OpenTelemetry spans. Observers an embedder or test attached run after them.
 */
import type { Logger } from 'pino'
import type { Config } from '../core/config.js'
import { modelNameFor } from '../core/agent-model.js'
import { createLogObserver } from './log-observer.js'
import { GatewayMetrics, type MetricsSources, type ModelLabels } from './metrics.js'
import { composeObservers, type Observer } from './observer.js'
import { TracingObserver } from './tracing.js'

export interface ObservabilityOptions {
  config: Config
  log: Logger
  sources: MetricsSources
}

export interface Observability {
  /** The gateway's observers followed by `extra`; one failing observer never stops the others. */
  around (extra: Observer): Observer
  /** null when `metrics.enabled` is false: nothing is counted and /metrics is not served. */
  metrics: GatewayMetrics | null
  close (): void
}

/** Each (provider, model) pair some agent calls, once. */
function configuredModels (config: Config): ModelLabels[] {
  const seen = new Map<string, ModelLabels>()
  for (const agent of Object.values(config.agents)) {
    const labels = { provider: agent.provider, model: modelNameFor(config, agent) }
    seen.set(`${labels.provider}\u0000${labels.model}`, labels)
  }
  return [...seen.values()]
}

export function createObservability (options: ObservabilityOptions): Observability {
  const { config, log } = options
  const metrics = config.metrics.enabled
    ? new GatewayMetrics({
      prefix: config.metrics.prefix,
      processMetrics: config.metrics.process_metrics,
      sources: options.sources,
      models: configuredModels(config)
    })
    : null
  const tracing = config.tracing.enabled ? new TracingObserver() : null
  const observers: Observer[] = [createLogObserver(log, { toolCalls: config.log.tool_calls, maxFieldChars: config.log.max_field_chars })]
  if (metrics !== null) observers.push(metrics)
  if (tracing !== null) observers.push(tracing)
  return {
    around: (extra) => composeObservers([...observers, extra], (err) => { log.error({ err }, 'observer failed') }),
    metrics,
    close () {
      tracing?.close()
      metrics?.close()
    }
  }
}
