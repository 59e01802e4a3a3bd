/**
 * The one slow-consumer policy of every streaming transport (WebSocket and SSE): a reader with
 * more than `ws.max_buffered_bytes` unsent loses its stream, instead of the gateway buffering a
 * turn's events for it without bound.
 */
import type { Logger } from 'pino'
import type { Config } from '../core/config.js'

export function isSlowConsumer (config: Config, bufferedBytes: number): boolean {
  return bufferedBytes > config.ws.max_buffered_bytes
}

export function logSlowConsumer (log: Logger, transport: 'WebSocket' | 'SSE', fields: Record<string, unknown>, buffered: number): void {
  log.warn({ ...fields, buffered }, `closing a slow ${transport} consumer`)
}
