/**
 * The gateway's logger: pino with credential scrubbing on every line, whoever logs it (routes,
 * the turn engine, tools through their context logger, Fastify's request logging).
 *
 * Scrubbing runs on the serialised line (pino's streamWrite hook) because serializers such as
 * Fastify's `req` run after `formatters.log` and would re-introduce a raw `?access_token=` URL.
 */
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino'
import { redactionPaths } from './log-redaction.js'
import { mayHoldSecret, scrubText, scrubValue } from './redact.js'

/** Lines without anything secret-looking skip the parse and stay on pino's fast path. */
export function scrubLogLine (line: string): string {
  if (!mayHoldSecret(line)) return line
  const newline = line.endsWith('\n') ? '\n' : ''
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return scrubText(line)
  }
  // Structured: each string is scrubbed on its own, so the line stays valid JSON.
  return JSON.stringify(scrubValue(value)) + newline
}

export function loggerOptions (level: LoggerOptions['level']): LoggerOptions {
  return {
    level,
    redact: { paths: redactionPaths, censor: '[REDACTED]' },
    hooks: { streamWrite: scrubLogLine }
  }
}

export function createGatewayLogger (level: LoggerOptions['level'], destination?: DestinationStream): Logger {
  return destination === undefined ? pino(loggerOptions(level)) : pino(loggerOptions(level), destination)
}
