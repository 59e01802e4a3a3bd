/**
 * The terminal client's rule for stray answer keys. A person answers a question by typing a
 * letter and Enter; if the question is withdrawn just before (it expired, someone answered it
 * elsewhere, the turn was cancelled), that letter must not become a chat message, nor the answer
 * to the next question. So, with `guardMs` (`--answer-guard-ms`, default 1000 in a terminal):
 *
 *  1. a line entered within `guardMs` after a question was withdrawn is swallowed;
 *  2. after that, the first line that looks like an answer (y, n, a, e, yes, no, always, edit)
 *     entered at the message prompt is swallowed too: typing it again sends it;
 *  3. a new question takes a line as its answer only once it has been on screen for `guardMs`;
 *     a line entered sooner (or typed ahead before the question appeared) is swallowed.
 *
 * Every swallowed line gets a notice saying why (rule 2 holds even with `guardMs` 0, which is
 * what piped input uses: a script's lines are consumed in order with no timing rule).
 */
import type { OperatorDecision } from '@tollgate/client'

/** Why a question left the prompt before this client answered it. */
export type Withdrawal =
  | { kind: 'expired' }
  | { kind: 'answered', decision: string, by: string }
  | { kind: 'auto-denied' }
  | { kind: 'turn-cancelled' }
  | { kind: 'turn-ended', outcome: string }
  | { kind: 'lost' }

export function withdrawalText (w: Withdrawal): string {
  switch (w.kind) {
    case 'expired': return 'it expired unanswered (the call was denied)'
    case 'answered': return `it was answered ${w.decision} by ${w.by}`
    case 'auto-denied': return 'the runtime denied it (no one could be asked)'
    case 'turn-cancelled': return 'the turn was cancelled'
    case 'turn-ended': return `the turn ended (${w.outcome})`
    case 'lost': return 'this client lost the turn\'s events'
  }
}

export function parseDecision (line: string): OperatorDecision | null {
  switch (line.trim().toLowerCase()) {
    case 'y': case 'yes': return 'yes'
    case 'n': case 'no': return 'no'
    case 'a': case 'always': return 'always'
    case 'e': case 'edit': return 'edit'
    default: return null
  }
}

interface Withdrawn {
  tool: string
  why: Withdrawal
  at: number
  /** Rule 2 still applies: no line has been accepted at the message prompt since. */
  armed: boolean
}

/** Where a line was entered: at the message prompt, or as the answer to a question shown at `shownAt`. */
export type LineTarget = { kind: 'message' } | { kind: 'answer', shownAt: number }

export class AnswerGuard {
  private withdrawn: Withdrawn | null = null

  constructor (readonly guardMs: number) {}

  withdraw (tool: string, why: Withdrawal, now: number): void {
    this.withdrawn = { tool, why, at: now, armed: true }
  }

  /** A new question is on screen: a stray key now belongs to rule 3, not rule 2. */
  questionShown (): void {
    if (this.withdrawn !== null) this.withdrawn.armed = false
  }

  /** Null when the line may be used; otherwise the notice saying why it was swallowed. */
  check (line: string, at: number, target: LineTarget): string | null {
    const shown = JSON.stringify(clipLine(line))
    const w = this.withdrawn
    if (w !== null && this.guardMs > 0 && at >= w.at && at < w.at + this.guardMs) {
      const why = withdrawalText(w.why)
      return `(ignored ${shown}: the question about ${w.tool} was withdrawn a moment before, because ${why}; nothing was sent)`
    }
    if (target.kind === 'answer') {
      if (this.guardMs > 0 && at < target.shownAt + this.guardMs) {
        return `(ignored ${shown}: it was typed before this question had been on screen for ${this.guardMs} ms; read it, then answer)`
      }
      return null
    }
    if (w !== null && w.armed) {
      w.armed = false
      if (parseDecision(line) !== null) {
        const why = withdrawalText(w.why)
        return `(not sent: ${shown} looks like an answer to the question about ${w.tool}, which was withdrawn because ${why}; ` +
          'type it again to send it as a message)'
      }
    }
    return null
  }
}

function clipLine (line: string): string {
  const chars = Array.from(line)
  return chars.length <= 40 ? line : `${chars.slice(0, 40).join('')}…`
}
