/** A pino logger that keeps its JSON lines in memory, for assertions on what the gateway logged. */
import { Writable } from 'node:stream'
import { pino, type Logger } from 'pino'
import { redactionPaths } from '../../src/security/log-redaction.js'

export interface LogLines {
  logger: Logger
  lines (): Array<Record<string, any>>
}

export function collectLogLines (): LogLines {
  const chunks: string[] = []
  const stream = new Writable({
    write (chunk: Buffer | string, _encoding, callback) {
      chunks.push(chunk.toString())
      callback()
    }
  })
  const logger = pino({ level: 'info', redact: { paths: redactionPaths, censor: '[REDACTED]' } }, stream)
  return {
    logger,
    lines: () => chunks.join('').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, any>)
  }
}
