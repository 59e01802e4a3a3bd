/**
 * Builds the turn journal over the event bus: a `StoredJournal` when the store keeps an event log
 * (`store.event_log`, not the memory store), else a `BusJournal`. The composition root builds the
 * bus first (createBus, handing it `eventArchive` for a Redis bus's refills) and this over it.
 */
import type { Logger } from 'pino'
import type { EventArchive, EventBus } from '../bus/bus.js'
import type { Config } from '../core/config.js'
import type { BusEnvelope } from '../core/envelope.js'
import type { Store } from '../store/store.js'
import { BusJournal } from './bus-journal.js'
import type { TurnJournal } from './journal.js'
import { StoredJournal } from './stored-journal.js'

/** Events held for the store while it is unreachable (the oldest go first). */
const EVENT_LOG_BUFFER = 100_000

export interface CreateJournalOptions {
  bus: EventBus
  store: Store
  log: Logger
  /** Fault injection for crash tests: called after each group of events is stored, before it is published. */
  afterGroupWrite?: ((group: readonly BusEnvelope[]) => void) | undefined
}

/** Whether the store keeps an event log that the journal writes every event to. */
export function keepsEventLog (config: Config): boolean {
  return config.store.event_log && config.store.kind !== 'memory'
}

/** The store's event log as a Redis bus's second source, where the store keeps one. */
export function eventArchive (config: Config, store: Store): EventArchive | undefined {
  if (!keepsEventLog(config)) return undefined
  return async (turnId, afterSeq, limit) => await store.readEvents(turnId, afterSeq, limit)
}

export function createJournal (config: Config, options: CreateJournalOptions): TurnJournal {
  const { bus, store, log, afterGroupWrite } = options
  if (!keepsEventLog(config)) return new BusJournal(bus, store)
  return new StoredJournal({
    bus, store, log, maxEventsPerTurn: config.turns.max_events_per_turn, maxBuffered: EVENT_LOG_BUFFER,
    ...(afterGroupWrite === undefined ? {} : { afterGroupWrite })
  })
}
