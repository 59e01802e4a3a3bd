/**
 * `tool.progress`: what a running tool reports (MCP progress notifications, shell output lines)
 * turned into events. Tools only hand updates to `ToolContext.progress`; this module owns the
 * rendering rules: control characters removed, secrets scrubbed, messages bounded in bytes, at
 * most `maxPerSecond` events per call in any second (the latest held-back update follows once
 * the second is over), at most `maxPerCall` in all, and nothing once the call has settled. A
 * reported plan is checked entry by entry (malformed entries dropped, at most MAX_PLAN_ENTRIES),
 * its texts cleaned like messages; a held-back update keeps the plan an update it replaces had.
 */
import { MAX_PLAN_ENTRIES, type PlanEntry, type TurnEvent } from '../../schemas/events.js'
import { scrubText } from '../core/security/redact.js'
import type { ToolProgress } from '../tools/contract.js'

export interface ProgressLimits {
  maxPerSecond: number
  maxPerCall: number
  maxMessageBytes: number
}

export interface ProgressReporter {
  report (update: ToolProgress): void
  /** Called before the call's result is announced: drops a held-back update, ignores later ones. */
  close (): void
}

const WINDOW_MS = 1000
const ELLIPSIS = '…'
// ANSI escape sequences (colours, cursor moves) and the other C0/C1 controls but tab: a progress
// line is one line of text. Removed before scrubbing, so no removal can join a secret together.
// eslint-disable-next-line no-control-regex
const CONTROLS = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[@-_]|[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g

/** At most `maxBytes` UTF-8 bytes, cut at a character boundary, marked with an ellipsis when cut. */
export function clipUtf8 (text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text
  const room = maxBytes - Buffer.byteLength(ELLIPSIS, 'utf8')
  let bytes = 0
  let end = 0
  for (const ch of text) {
    const size = Buffer.byteLength(ch, 'utf8')
    if (bytes + size > room) break
    bytes += size
    end += ch.length
  }
  return text.slice(0, end) + ELLIPSIS
}

function count (value: number | undefined): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined
}

/** One line of text as people may read it: controls removed, secrets scrubbed, bounded; undefined when empty. */
function line (value: unknown, maxBytes: number): string | undefined {
  const text = typeof value === 'string' ? value.replace(CONTROLS, '').trimEnd() : ''
  return text === '' ? undefined : clipUtf8(scrubText(text), maxBytes)
}

const PLAN_STATUSES = new Set(['pending', 'in_progress', 'completed'])
const PLAN_PRIORITIES = new Set(['high', 'medium', 'low'])

/** The tool's plan as the event carries it; tools are code we do not control, so every field is checked. */
function renderPlan (plan: unknown, maxBytes: number): PlanEntry[] | undefined {
  if (!Array.isArray(plan)) return undefined
  const entries: PlanEntry[] = []
  for (const item of plan as unknown[]) {
    if (entries.length === MAX_PLAN_ENTRIES) break
    if (typeof item !== 'object' || item === null) continue
    const { content, status, priority } = item as Record<string, unknown>
    const text = line(content, maxBytes)
    if (text === undefined || typeof status !== 'string' || !PLAN_STATUSES.has(status)) continue
    entries.push({
      content: text,
      priority: typeof priority === 'string' && PLAN_PRIORITIES.has(priority) ? priority as PlanEntry['priority'] : 'medium',
      status: status as PlanEntry['status']
    })
  }
  return entries
}

type ProgressEvent = Extract<TurnEvent, { kind: 'tool.progress' }>

function render (callId: string, update: ToolProgress, maxMessageBytes: number): ProgressEvent | null {
  const progress = count(update.progress)
  const total = count(update.total)
  const message = line(update.message, maxMessageBytes)
  const plan = renderPlan(update.plan, maxMessageBytes)
  if (progress === undefined && total === undefined && message === undefined && plan === undefined) return null
  return {
    kind: 'tool.progress',
    call_id: callId,
    ...(progress === undefined ? {} : { progress }),
    ...(total === undefined ? {} : { total }),
    ...(message === undefined ? {} : { message }),
    ...(plan === undefined ? {} : { plan })
  }
}

export function createProgressReporter (options: {
  callId: string
  limits: ProgressLimits
  emit: (event: TurnEvent) => void
}): ProgressReporter {
  const { callId, limits, emit } = options
  const sentAt: number[] = []
  let sent = 0
  let held: ProgressEvent | null = null
  let timer: NodeJS.Timeout | null = null
  let closed = false

  const send = (event: TurnEvent, now: number): void => {
    sentAt.push(now)
    if (sentAt.length > limits.maxPerSecond) sentAt.shift()
    sent += 1
    emit(event)
  }
  // Free when fewer than maxPerSecond events went out in the last second.
  const freeAt = (): number => sentAt.length < limits.maxPerSecond ? 0 : (sentAt[0] as number) + WINDOW_MS
  const schedule = (delay: number): void => {
    timer = setTimeout(flush, Math.max(delay, 0))
    timer.unref()
  }
  const flush = (): void => {
    timer = null
    if (closed || held === null) return
    // A timer may fire a millisecond before the wall clock says the window is over (libuv rounds
    // its monotonic clock); wait out the rest rather than send a third event inside the second.
    const now = Date.now()
    const free = freeAt()
    if (free > now) {
      schedule(free - now)
      return
    }
    const event = held
    held = null
    send(event, now)
  }

  return {
    report (update) {
      if (closed || sent >= limits.maxPerCall) return
      const event = render(callId, update, limits.maxMessageBytes)
      if (event === null) return
      const now = Date.now()
      const free = freeAt()
      if (free <= now && held === null) {
        send(event, now)
        return
      }
      // Only the latest update waits, but a plan is whole state: one it replaces must not be lost.
      held = event.plan === undefined && held?.plan !== undefined ? { ...event, plan: held.plan } : event
      if (timer === null) schedule(free - now)
    },
    close () {
      closed = true
      held = null
      if (timer !== null) clearTimeout(timer)
      timer = null
    }
  }
}
