/** Collects the gateway's real log output (the production logger, scrubbing included) in memory. */
import { Writable } from 'node:stream'
import type { Logger } from 'pino'
import { createGatewayLogger } from '../../src/core/security/log-scrub.js'

export interface LogCapture {
  logger: Logger
  /** Everything written so far, one JSON line per entry. */
  text (): string
  lines (): Array<Record<string, any>>
}

export function captureLogs (level: 'trace' | 'debug' | 'info' = 'trace'): LogCapture {
  const chunks: string[] = []
  const stream = new Writable({
    write (chunk: Buffer | string, _encoding, callback) {
      chunks.push(chunk.toString())
      callback()
    }
  })
  const logger = createGatewayLogger(level, stream)
  const text = (): string => chunks.join('')
  return {
    logger,
    text,
    lines: () => text().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, any>)
  }
}
