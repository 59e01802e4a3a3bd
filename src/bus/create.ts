/**
 * Builds the configured event bus (`bus.kind`) and, when the store keeps an event log, wraps
 * it so every event is persisted and replay falls back to the store.
 */
import type { Logger } from 'pino'
import type { Config } from '../core/config.js'
import { connectionUrl } from '../store/create.js'
import type { Store } from '../store/store.js'
import { ArchivingBus } from './archiving.js'
import type { BusEnvelope, EventBus } from './bus.js'
import { MemoryEventBus } from './memory.js'
import { RedisEventBus } from './redis.js'

const DAY_MS = 86_400_000
/** Events held for the store while it is unreachable (the oldest go first). */
const EVENT_LOG_BUFFER = 100_000
export interface CreateBusOptions {
  store: Store
  env: NodeJS.ProcessEnv
  /** Fault injection for crash tests: called after each group of events is stored, before it is published. */
  afterGroupWrite?: (group: readonly BusEnvelope[]) => void
  log: Logger
  onListenerError: (err: unknown) => void
}

export async function createBus (config: Config, options: CreateBusOptions): Promise<EventBus> {
  const { store, log } = options
  const archived = config.store.event_log && config.store.kind !== 'memory'
  const maxEvents = config.turns.max_events_per_turn
  const readArchive = async (turnId: string, afterSeq: number, limit: number): Promise<BusEnvelope[]> =>
    await store.readEvents(turnId, afterSeq, limit)
  let inner: EventBus
  if (config.bus.kind === 'redis') {
    if (config.store.kind !== 'postgres') {
      log.warn({ store: config.store.kind }, 'bus.kind is "redis" but the store is not shared: instances cannot see each other\'s turns (use store.kind = "postgres" for many instances)')
    }
    const rc = config.bus.redis
    inner = await RedisEventBus.connect({
      url: connectionUrl(rc, options.env, 'bus.redis'),
      keyPrefix: rc.key_prefix,
      maxEventsPerTurn: maxEvents,
      streamTtlMs: config.turns.retention_ms + (config.turns.turn_timeout_ms > 0 ? config.turns.turn_timeout_ms : DAY_MS),
      maxBufferedEvents: rc.max_buffered_events,
      connectTimeoutMs: rc.connect_timeout_ms,
      ...(archived ? { archive: readArchive } : {}),
      log,
      onListenerError: options.onListenerError
    })
  } else {
    inner = new MemoryEventBus({ maxEventsPerTurn: maxEvents, onListenerError: options.onListenerError })
  }
  if (!archived) return inner
  const { afterGroupWrite } = options
  return new ArchivingBus({
    inner, store, log, maxEventsPerTurn: maxEvents, maxBuffered: EVENT_LOG_BUFFER,
    ...(afterGroupWrite === undefined ? {} : { afterGroupWrite })
  })
}
