/**
 * Builds the configured event bus (`bus.kind`). Fan-out and replay only: the turn journal
 * (src/journal/create.ts) is composed over it where the store keeps an event log.
 */
import type { Logger } from 'pino'
import type { Config } from '../core/config.js'
import { connectionUrl } from '../core/connection-url.js'
import type { EventArchive, EventBus } from './bus.js'
import { MemoryEventBus } from './memory.js'
import { RedisEventBus } from './redis.js'

const DAY_MS = 86_400_000

export interface CreateBusOptions {
  env: NodeJS.ProcessEnv
  /**
   * Where a Redis bus refills a follower's feed when its stream lost events (the store's event
   * log, when it keeps one); none by default.
   */
  archive?: EventArchive | undefined
  log: Logger
  onListenerError: (err: unknown) => void
}

export async function createBus (config: Config, options: CreateBusOptions): Promise<EventBus> {
  const { log, archive } = options
  const maxEvents = config.turns.max_events_per_turn
  if (config.bus.kind !== 'redis') return new MemoryEventBus({ maxEventsPerTurn: maxEvents, onListenerError: options.onListenerError })
  if (config.store.kind !== 'postgres') {
    log.warn({ store: config.store.kind }, 'bus.kind is "redis" but the store is not shared: instances cannot see each other\'s turns (use store.kind = "postgres" for many instances)')
  }
  const rc = config.bus.redis
  return await RedisEventBus.connect({
    url: connectionUrl(rc, options.env, 'bus.redis'),
    keyPrefix: rc.key_prefix,
    maxEventsPerTurn: maxEvents,
    streamTtlMs: config.turns.retention_ms + (config.turns.turn_timeout_ms > 0 ? config.turns.turn_timeout_ms : DAY_MS),
    maxBufferedEvents: rc.max_buffered_events,
    connectTimeoutMs: rc.connect_timeout_ms,
    ...(archive === undefined ? {} : { archive }),
    log,
    onListenerError: options.onListenerError
  })
}
