/**
 * Structured log lines from observer records: one info line when a tool call starts, one when it
 * ends, and one audit line per approval decision. Arguments and results arrive scrubbed (and the
 * gateway logger scrubs every line again); here they are bounded, so no line carries a megabyte.
 */
import type { Logger } from 'pino'
import { canonicalJson } from '../core/json/canonical.js'
import type { Observer, ObserverEvent } from './observer.js'

export interface LogObserverOptions {
  /** Tool start/end lines; approval audit lines are always written. */
  toolCalls: boolean
  maxFieldChars: number
}

function bounded (text: string, max: number): string {
  if (text.length <= max) return text
  return `${text.slice(0, max)}…[${text.length - max} more chars]`
}

/** Small arguments stay structured (searchable); large ones become a bounded JSON preview. */
function boundedArguments (args: unknown, max: number): unknown {
  let text: string
  try {
    text = canonicalJson(args)
  } catch {
    return '[unserialisable arguments]'
  }
  return text.length <= max ? args : bounded(text, max)
}

function correlation (e: ObserverEvent): Record<string, string> {
  return { turn_id: e.turn_id, session_id: e.session_id, agent: e.agent, channel: e.channel }
}

export function createLogObserver (log: Logger, options: LogObserverOptions): Observer {
  const max = options.maxFieldChars
  return {
    record (event) {
      switch (event.kind) {
        case 'tool_call_start':
          // Checked first: a line the level filters out would still pay for its bounded arguments.
          if (!options.toolCalls || !log.isLevelEnabled('info')) return
          log.info({
            event: 'tool_call_start',
            tool: event.tool,
            call_id: event.call_id,
            ...(event.provider_call_id === undefined ? {} : { provider_call_id: event.provider_call_id }),
            arguments: boundedArguments(event.arguments, max),
            ...correlation(event)
          }, 'tool call started')
          return
        case 'tool_call':
          if (!options.toolCalls || !log.isLevelEnabled('info')) return
          log.info({
            event: 'tool_call',
            tool: event.tool,
            call_id: event.call_id,
            ...(event.provider_call_id === undefined ? {} : { provider_call_id: event.provider_call_id }),
            status: event.status,
            success: event.success,
            // Records carry the measured fraction; a microsecond is enough for a reader.
            duration_ms: Math.round(event.duration_ms * 1000) / 1000,
            result: bounded(event.result, max),
            ...correlation(event)
          }, 'tool call finished')
          return
        case 'permission':
          log.info({
            audit: 'permission_decision',
            call_id: event.call_id,
            tool: event.tool,
            rule: event.rule,
            outcome: event.outcome,
            mode: event.mode,
            policy_version: event.policy_version,
            requirement: event.requirement,
            reason: event.reason,
            ...correlation(event)
          }, `permission ${event.outcome} for ${event.tool} by ${event.rule}${event.mode === 'shadow' ? ' (shadow)' : ''}`)
          return
        case 'approval':
          log.info({
            audit: 'approval_decision',
            request_id: event.request_id,
            call_id: event.call_id,
            tool: event.tool,
            decision: event.decision,
            decided_by: event.decided_by,
            approval_channel: event.approval_channel,
            principal: event.principal,
            ...correlation(event)
          }, `approval ${event.decision} for ${event.tool}`)
      }
    }
  }
}
