/**
 * The running gateway as routes and transports see it: its HTTP app and the services composed by
 * app/server.ts. A type only, so routes depend on it without depending on the composition root.
 */
import type { AuditRecorder } from '../service/audit-recorder.js'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import type { Authenticator } from '../auth/authenticate.js'
import type { Principal } from '../auth/principal.js'
import type { EventBus } from '../bus/bus.js'
import type { Config } from '../core/config.js'
import type { TurnJournal } from '../journal/journal.js'
import type { OriginPolicy } from '../core/security/origin-check.js'
import type { McpManager } from '../mcp/manager.js'
import type { GatewayMetrics } from '../observe/metrics.js'
import type { ConnectionRegistry } from '../service/connections.js'
import type { TurnService } from '../service/turn-service.js'
import type { Schedules } from '../schedule/schedules.js'
import type { Store } from '../store/store.js'
import type { Notifier } from '../notify/notifier.js'
import type { WorkspaceLayout } from '../tools/builtin/workspace-layout.js'

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null
  }
}

export interface Gateway {
  app: FastifyInstance
  config: Config
  turns: TurnService
  connections: ConnectionRegistry
  /** null when `metrics.enabled` is false. */
  metrics: GatewayMetrics | null
  /** Fan-out, replay and the control plane. */
  bus: EventBus
  /** Where turns' events are stored, then published on the bus; replays filled from the store. */
  journal: TurnJournal
  store: Store
  /** The principals' schedules (/v1/schedules); their ticks fire in the scheduler. */
  schedules: Schedules
  /** Announces what no turn event carries (a failed scheduled run) to the configured webhooks; silent without any. */
  notifier: Notifier
  /** The tenants' hash-chained audit (GET /v1/audit). */
  audit: AuditRecorder
  /** This process on the store's leases and the bus's control plane. */
  instanceId: string
  auth: Authenticator
  /** Which browser origins may open /v1/ws. */
  origins: OriginPolicy
  log: Logger
  mcp: McpManager
  /** Where each tenant's (or session's) tools work. */
  workspaces: WorkspaceLayout
  /** False once the store has refused this instance's lease renewals for a whole lease time. */
  storeReachable (): boolean
  /** False once the bus (Redis) has been unreachable for `bus.redis.unready_after_ms`. */
  busReachable (): boolean
  close (): Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    gateway: Gateway
  }
}
