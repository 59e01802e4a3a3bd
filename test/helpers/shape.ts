import type { TurnEvent } from '../../schemas/events.js'

/** Compact view of an event sequence for exact assertions: kind, plus tool status/name where useful; text deltas left out. */
export function eventShape (events: readonly TurnEvent[]): string[] {
  return events.map((e) => {
    switch (e.kind) {
      case 'tool_call': return `tool_call:${e.name}`
      case 'tool_result': return `tool_result:${e.name}:${e.status}`
      case 'approval.resolved': return `approval.resolved:${e.decision}`
      case 'approval.requested': return `approval.requested:${e.name}`
      default: return e.kind
    }
  }).filter((k) => k !== 'text.delta')
}
