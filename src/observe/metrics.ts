/**
 * Prometheus metrics of one gateway. Each gateway owns its own Registry (never prom-client's
 * global one), so two gateways in one process count separately and close cleanly.
 *
 * Durations are observed in seconds exactly as measured (no rounding to milliseconds).
 *
 * Labels carry only bounded values: tool names the catalog knows (anything else the model
 * invents is `_unknown`), statuses and decisions from closed enums, provider and model names
 * from config, transports. Never turn, session, call or principal ids.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import { CHECKPOINT_STEPS, type Observer, type ObserverEvent } from './observer.js'

export interface MetricsSources {
  activeTurns: () => number
  wsConnections: () => number
  /** Whether a tool name may become a label value (the catalog is bounded; model text is not). */
  isKnownTool: (name: string) => boolean
}

/** A provider and model some agent is configured to call: its series exist (at zero) from the start. */
export interface ModelLabels {
  provider: string
  model: string
}

export interface MetricsOptions {
  prefix: string
  processMetrics: boolean
  sources: MetricsSources
  models?: readonly ModelLabels[]
}

export type EventTransport = 'ws' | 'sse'

export const UNKNOWN_TOOL_LABEL = '_unknown'

// From half a millisecond: a local file read or a cached answer takes well under 5 ms, and a
// histogram whose first bucket holds nearly every observation says nothing.
export const TOOL_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
export const PROVIDER_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120]
export const TURN_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800]

/** Closed label sets, initialised at zero so a rate or an alert sees a series before its first event. */
const TURN_STATUSES = ['completed', 'cancelled', 'failed'] as const
const TRANSPORTS: readonly EventTransport[] = ['ws', 'sse']
const TOKEN_TYPES = ['input', 'output'] as const
/** Operators decide over a socket or REST; the runtime's fail-closed decisions have their own channel. */
const APPROVAL_SERIES: ReadonlyArray<{ decision: string, channel: string }> = [
  ...['yes', 'no', 'always', 'edit'].flatMap((decision) => ['websocket', 'rest'].map((channel) => ({ decision, channel }))),
  ...['auto-deny', 'expired', 'cancelled'].map((decision) => ({ decision, channel: 'runtime' }))
]

function isCount (n: number | undefined): n is number {
  return typeof n === 'number' && Number.isFinite(n) && n >= 0
}

export class GatewayMetrics implements Observer {
  readonly registry = new Registry()
  private readonly sources: MetricsSources
  private readonly toolCalls: Counter<'tool' | 'status'>
  private readonly toolDuration: Histogram<'tool' | 'status'>
  private readonly approvals: Counter<'decision' | 'channel'>
  private readonly permissions: Counter<'rule' | 'outcome' | 'mode'>
  private readonly turnsTotal: Counter<'status'>
  private readonly turnDuration: Histogram<'status'>
  private readonly eventsSent: Counter<'transport'>
  /**
   * Events written since the last scrape, by transport: counted as plain numbers on the stream's
   * hot path (one per event and client) and added to the counter when it is collected.
   */
  private readonly unsent: Record<EventTransport, number> = { ws: 0, sse: 0 }
  private readonly providerDuration: Histogram<'provider' | 'model' | 'outcome'>
  private readonly providerErrors: Counter<'provider' | 'model'>
  private readonly providerTokens: Counter<'provider' | 'model' | 'token_type'>
  private readonly cost: Counter<'tenant' | 'agent' | 'model'>
  private readonly checkpointFailures: Counter<'step'>

  constructor (options: MetricsOptions) {
    const p = options.prefix
    const registers = [this.registry]
    this.sources = options.sources
    this.toolCalls = new Counter({ name: `${p}tool_calls_total`, help: 'Tool calls dispatched for execution, by terminal status (ok, error, interrupted)', labelNames: ['tool', 'status'], registers })
    this.toolDuration = new Histogram({ name: `${p}tool_call_duration_seconds`, help: 'Wall time of dispatched tool calls', labelNames: ['tool', 'status'], buckets: TOOL_BUCKETS, registers })
    this.approvals = new Counter({ name: `${p}approvals_total`, help: 'Approval decisions, by decision and the channel that decided', labelNames: ['decision', 'channel'], registers })
    // Rule labels are rules as written in the configuration (or `default`, `session grant`): bounded.
    this.permissions = new Counter({
      name: `${p}permission_decisions_total`,
      help: 'Permission rule decisions at the approval gate, by deciding rule, outcome (allow, ask, deny, default) and mode (enforce, shadow)',
      labelNames: ['rule', 'outcome', 'mode'],
      registers
    })
    this.turnsTotal = new Counter({ name: `${p}turns_total`, help: 'Finished turns, by terminal status', labelNames: ['status'], registers })
    this.turnDuration = new Histogram({
      name: `${p}turn_duration_seconds`,
      help: 'Wall time of finished turns, from acceptance to the terminal record, by terminal status',
      labelNames: ['status'],
      buckets: TURN_BUCKETS,
      registers
    })
    const unsent = this.unsent
    this.eventsSent = new Counter({
      name: `${p}events_sent_total`,
      help: 'Turn events written to clients, by transport',
      labelNames: ['transport'],
      registers,
      collect () {
        for (const transport of TRANSPORTS) {
          if (unsent[transport] === 0) continue
          this.inc({ transport }, unsent[transport])
          unsent[transport] = 0
        }
      }
    })
    this.providerDuration = new Histogram({ name: `${p}provider_request_duration_seconds`, help: 'Model provider requests, by outcome', labelNames: ['provider', 'model', 'outcome'], buckets: PROVIDER_BUCKETS, registers })
    this.providerErrors = new Counter({ name: `${p}provider_errors_total`, help: 'Model provider requests that failed (cancelled requests excluded)', labelNames: ['provider', 'model'], registers })
    this.cost = new Counter({
      name: `${p}cost_usd_total`, help: 'USD of answered model calls at the configured prices (calls without a price are not counted)', labelNames: ['tenant', 'agent', 'model'], registers
    })
    this.providerTokens = new Counter({
      name: `${p}provider_tokens_total`,
      help: 'Tokens the provider reported, by token type (input, output)',
      labelNames: ['provider', 'model', 'token_type'],
      registers
    })
    this.checkpointFailures = new Counter({
      name: `${p}checkpoint_failures_total`,
      help: 'Durable turns\' checkpoints that could not be made, by safe point (the turn went on from its last one)',
      labelNames: ['step'],
      registers
    })
    this.initialise(options.models ?? [])
    const sources = this.sources
    // Gauges read live state at scrape time: nothing to keep in step with turns and sockets.
    this.registry.registerMetric(new Gauge({ name: `${p}turns_active`, help: 'Turns running in this process', registers: [], collect () { this.set(sources.activeTurns()) } }))
    this.registry.registerMetric(new Gauge({ name: `${p}ws_connections`, help: 'Open WebSocket connections', registers: [], collect () { this.set(sources.wsConnections()) } }))
    // Unprefixed on purpose: standard Node.js dashboards expect process_* and nodejs_* names.
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry })
  }

  private initialise (models: readonly ModelLabels[]): void {
    for (const status of TURN_STATUSES) {
      this.turnsTotal.inc({ status }, 0)
      this.turnDuration.zero({ status })
    }
    for (const transport of TRANSPORTS) this.eventsSent.inc({ transport }, 0)
    for (const labels of APPROVAL_SERIES) this.approvals.inc(labels, 0)
    for (const step of CHECKPOINT_STEPS) this.checkpointFailures.inc({ step }, 0)
    for (const { provider, model } of models) {
      const labels = { provider, model }
      this.providerErrors.inc(labels, 0)
      for (const outcome of ['ok', 'error']) this.providerDuration.zero({ ...labels, outcome })
      for (const tokenType of TOKEN_TYPES) this.providerTokens.inc({ ...labels, token_type: tokenType }, 0)
    }
  }

  private toolLabel (name: string): string {
    return this.sources.isKnownTool(name) ? name : UNKNOWN_TOOL_LABEL
  }

  record (event: ObserverEvent): void {
    switch (event.kind) {
      case 'tool_call': {
        const labels = { tool: this.toolLabel(event.tool), status: event.status }
        this.toolCalls.inc(labels)
        this.toolDuration.observe(labels, event.duration_ms / 1000)
        return
      }
      case 'approval':
        this.approvals.inc({ decision: event.decision, channel: event.approval_channel })
        return
      case 'permission':
        this.permissions.inc({ rule: event.rule, outcome: event.outcome, mode: event.mode })
        return
      case 'turn_end':
        this.turnsTotal.inc({ status: event.status })
        this.turnDuration.observe({ status: event.status }, event.duration_ms / 1000)
        return
      case 'checkpoint_failed':
        this.checkpointFailures.inc({ step: event.step })
        return
      case 'llm_response': {
        const labels = { provider: event.provider, model: event.model }
        this.providerDuration.observe({ ...labels, outcome: event.success ? 'ok' : 'error' }, event.duration_ms / 1000)
        if (!event.success) this.providerErrors.inc(labels)
        // Usage is the provider's word; a negative or non-numeric count must not throw here.
        if (isCount(event.input_tokens)) this.providerTokens.inc({ ...labels, token_type: 'input' }, event.input_tokens)
        if (isCount(event.output_tokens)) this.providerTokens.inc({ ...labels, token_type: 'output' }, event.output_tokens)
        if (event.cost_usd !== undefined && event.cost_usd > 0) {
          this.cost.inc({ tenant: event.tenant ?? '', agent: event.agent, model: event.model }, event.cost_usd)
        }
      }
    }
  }

  eventSent (transport: EventTransport): void {
    this.unsent[transport]++
  }

  get contentType (): string {
    return this.registry.contentType
  }

  async exposition (): Promise<string> {
    return await this.registry.metrics()
  }

  close (): void {
    this.registry.clear()
  }
}
