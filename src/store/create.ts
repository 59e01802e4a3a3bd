/** Builds the configured store (`store.kind`) for one gateway instance. */
import type { Logger } from 'pino'
import type { Config } from '../core/config.js'
import { connectionUrl } from '../core/connection-url.js'
import { MemoryAuditLedger, type AuditLedger } from './audit-chain.js'
import { PostgresAuditLedger } from './audit-postgres.js'
import { SqliteAuditLedger } from './audit-sqlite.js'
import { MemoryStore } from './memory.js'
import { PostgresStore } from './postgres.js'
import type { SqlProbe } from './sql-probe.js'
import { SqliteStore } from './sqlite.js'
import type { Store } from './store.js'
import type { OutboxPlanner } from './outbox.js'

export interface CreateStoreOptions {
  instanceId: string
  env: NodeJS.ProcessEnv
  log: Logger
  /** Instrumentation of the SQLite store (benchmark); none by default. */
  probe?: SqlProbe
  /** What each stored event announces (notifications, src/notify/plan.ts); none by default. */
  planner?: OutboxPlanner | null
}

export async function createStore (config: Config, options: CreateStoreOptions): Promise<Store> {
  const { instanceId } = options
  const planner = options.planner == null ? {} : { planner: options.planner }
  // Both SQL stores retry a failed compaction a few times, then leave the turn for the next start.
  const onCompactionError = (err: unknown): void => { options.log.warn({ err }, 'could not compact a finished turn\'s events; they stay as written and are tried again later') }
  switch (config.store.kind) {
    case 'memory':
      return new MemoryStore({ instanceId })
    case 'sqlite':
      return new SqliteStore({
        path: config.store.sqlite.path,
        instanceId,
        onCheckpointError: (err) => { options.log.warn({ err }, 'could not checkpoint the SQLite WAL; retrying') },
        onCompactionError,
        ...(options.probe === undefined ? {} : { probe: options.probe }),
        ...planner
      })
    case 'postgres': {
      const pgc = config.store.postgres
      return await PostgresStore.open({
        connectionString: connectionUrl(pgc, options.env, 'store.postgres'),
        schema: pgc.schema,
        instanceId,
        maxConnections: pgc.max_connections,
        connectTimeoutMs: pgc.connect_timeout_ms,
        onIdleError: (err) => { options.log.warn({ err }, 'an idle PostgreSQL connection failed') },
        onCompactionError,
        ...planner
      })
    }
  }
}

/** The tenants' audit chains, in the configured store's database (decision 0213). */
export async function createAuditLedger (
  config: Config, options: Pick<CreateStoreOptions, 'env' | 'log'> & { store: Store }
): Promise<AuditLedger> {
  switch (config.store.kind) {
    case 'memory':
      return new MemoryAuditLedger()
    case 'sqlite':
      // The store's own connection, so the entries share its commits (decision 0277).
      return options.store instanceof SqliteStore ? options.store.auditLedger() : new SqliteAuditLedger(config.store.sqlite.path)
    case 'postgres': {
      const pgc = config.store.postgres
      return await PostgresAuditLedger.open({
        connectionString: connectionUrl(pgc, options.env, 'store.postgres'),
        schema: pgc.schema,
        connectTimeoutMs: pgc.connect_timeout_ms,
        onIdleError: (err) => { options.log.warn({ err }, 'an idle PostgreSQL connection of the audit chain failed') }
      })
    }
  }
}
