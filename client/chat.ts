/**
 * The terminal client's conversation loop: read a message, start a turn, stream its text and
 * tool cards, and ask the person at the keyboard about each approval (yes / no / always / edit).
 * Every model or tool string is stripped of control characters before it reaches the terminal,
 * so neither can move the cursor, recolour or retitle it, or hide text with bidi overrides.
 */
import { createInterface, type Interface } from 'node:readline'
import {
  modelArguments, resultText, timeLeft, TollgateClientError,
  type EventEnvelope, type OperatorDecision, type TollgateClient, type TurnEventOf, type TurnStream
} from '@tollgate/client'
import { AnswerGuard, parseDecision, withdrawalText, type LineTarget, type Withdrawal } from './answer-guard.js'

export { parseDecision } from './answer-guard.js'

export interface ChatOptions {
  client: TollgateClient
  input: NodeJS.ReadableStream
  output: NodeJS.WritableStream
  /** True for a TTY: line editing, and prompts are redrawn. */
  terminal: boolean
  agent?: string | undefined
  sessionId?: string | undefined
  detach?: boolean | undefined
  /** One-shot: run this message as a single turn and exit with its outcome. */
  message?: string | undefined
  /** How long to keep trying the first connection before giving up. */
  connectTimeoutMs?: number
  /** The stray-key guard window (client/answer-guard.ts); 0 turns its timing rules off. */
  answerGuardMs?: number
}

/** A terminal gets the stray-key guard by default; piped input (a script) does not. */
export const DEFAULT_ANSWER_GUARD_MS = 1000

export interface Chat {
  /** Resolves with the process exit code. */
  readonly done: Promise<number>
  /** Ctrl-C: cancels the running turn; with no turn running, ends the chat. */
  interrupt (): void
}

const MAX_OUTPUT_LINES = 20
const MAX_ARGS_CHARS = 400

/** C0/C1 controls (but tab and newline), DEL, and bidi embedding/override/isolate characters. */
// eslint-disable-next-line no-control-regex -- control characters are what this pattern finds
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g

export function terminalSafe (text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(UNSAFE, '')
}

/** For one-line fields (summaries, names): newlines shown as ↵ so a value cannot fake extra lines. */
function oneLine (text: string): string {
  return terminalSafe(text).trim().replace(/\n/g, '↵')
}

/**
 * An approval's arguments, exactly as the tool will receive them (the gateway escapes invisible
 * characters and marks line breaks with ⏎), one `name:` line each and the value below it, whole.
 * With a known terminal width long lines are wrapped here, continuation marked `┆`, so a wrap can
 * never pass for a line of its own (`│`); nothing is cut.
 */
export function exactArgumentLines (display: ReadonlyArray<{ name: string, value: string }>, columns: number | undefined): string[] {
  if (display.length === 0) return ['  (no arguments)']
  const width = columns === undefined ? Number.POSITIVE_INFINITY : Math.max(20, columns - 6)
  const lines: string[] = []
  for (const { name, value } of display) {
    lines.push(`  ${oneLine(name)}:`)
    for (const line of terminalSafe(value).split('\n')) {
      const chars = Array.from(line)
      lines.push(`    │ ${chars.slice(0, width).join('')}`)
      for (let at = width; at < chars.length; at += width) lines.push(`    ┆ ${chars.slice(at, at + width).join('')}`)
    }
  }
  return lines
}

/** A progress line: `3/4` and/or the tool's message, on one line. */
/** A tool's plan on one line: how many tasks are done, and the one under way. */
function planText (plan: NonNullable<TurnEventOf<'tool.progress'>['plan']>): string {
  const done = plan.filter((entry) => entry.status === 'completed').length
  const current = plan.find((entry) => entry.status === 'in_progress')
  return `plan ${done}/${plan.length} done${current === undefined ? '' : `, now: ${oneLine(current.content)}`}`
}

function progressText (e: TurnEventOf<'tool.progress'>): string {
  const count = e.progress === undefined ? '' : `${e.progress}${e.total === undefined ? '' : `/${e.total}`}`
  const message = e.message === undefined ? '' : oneLine(e.message)
  const plan = e.plan === undefined ? '' : planText(e.plan)
  return [count, message, plan].filter((part) => part !== '').join(' ')
}

function clip (text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more chars)`
}

/** Lines of input in arrival order; piped input may arrive long before it is asked for. */
interface Entry { text: string, at: number }

/** Decides whether a line entered at `at` may be used; prints the reason itself when not. */
type Admit = (text: string, at: number) => boolean

class LineQueue {
  private readonly lines: Entry[] = []
  private waiter: ((line: Entry | null) => void) | null = null
  private ended = false
  /** A TTY prompt is on screen waiting for input: other output must start on a fresh line. */
  prompting = false
  /** Takes a line nobody is waiting for (true: taken); a line it leaves is queued for the next prompt. */
  divert: ((entry: Entry) => boolean) | null = null

  constructor (
    private readonly rl: Interface, private readonly output: NodeJS.WritableStream, private readonly terminal: boolean,
    onInterrupt: () => void
  ) {
    // In a TTY readline takes Ctrl-C itself instead of the process getting SIGINT.
    rl.on('SIGINT', onInterrupt)
    rl.on('line', (line) => {
      const entry = { text: line, at: Date.now() }
      const waiter = this.waiter
      this.waiter = null
      if (waiter !== null) waiter(entry)
      else if (this.divert?.(entry) !== true) this.lines.push(entry)
    })
    rl.on('close', () => {
      this.ended = true
      const waiter = this.waiter
      this.waiter = null
      waiter?.(null)
    })
  }

  /** The next line `admit` accepts, or null once input has ended or `signal` aborted the question. */
  async next (prompt: string, signal?: AbortSignal, admit?: Admit): Promise<string | null> {
    for (;;) {
      const entry = await this.nextEntry(prompt, signal)
      if (entry === null) return null
      if (signal?.aborted === true) return null
      if (admit === undefined || admit(entry.text, entry.at)) return entry.text
    }
  }

  /**
   * Throws away a half-typed line (TTY only): typed for a question that has just been withdrawn,
   * it must not be completed into an answer to something else. Returns what was discarded.
   */
  discardPartial (): string {
    const partial = this.terminal ? this.rl.line : ''
    if (partial !== '') {
      this.rl.write(null, { ctrl: true, name: 'e' })
      this.rl.write(null, { ctrl: true, name: 'u' })
    }
    return partial
  }

  private async nextEntry (prompt: string, signal?: AbortSignal): Promise<Entry | null> {
    const queued = this.lines.shift()
    if (queued === undefined && this.ended) return null
    if (this.terminal) {
      if (queued !== undefined) return queued
      this.rl.setPrompt(prompt)
      this.rl.prompt()
      this.prompting = true
      try {
        return await this.wait(signal)
      } finally {
        this.prompting = false
      }
    }
    // Piped input is not echoed by anyone: write prompt and answer so the transcript reads as a dialogue.
    this.output.write(prompt)
    const line = queued ?? await this.wait(signal)
    this.output.write(line === null ? '\n' : `${line.text}\n`)
    return line
  }

  private async wait (signal: AbortSignal | undefined): Promise<Entry | null> {
    if (signal?.aborted === true) return null
    return await new Promise((resolve) => {
      const abandon = (): void => {
        if (this.waiter !== waiter) return
        this.waiter = null
        resolve(null)
      }
      const waiter = (line: Entry | null): void => {
        signal?.removeEventListener('abort', abandon)
        resolve(line)
      }
      this.waiter = waiter
      signal?.addEventListener('abort', abandon, { once: true })
    })
  }

  close (): void {
    this.rl.close()
  }
}

class ChatSession implements Chat {
  readonly done: Promise<number>
  private readonly lines: LineQueue
  private readonly guard: AnswerGuard
  private sessionId: string | undefined
  private running: string | null = null
  /** An approval question is on screen (or about to be): lines are its answers, never steering. */
  private asking = false
  private midLine = false
  private narration = ''
  /** A run of reasoning is shown collapsed: one line when it starts, not its words. */
  private thinking = false
  private stopping = false
  private finished = false

  constructor (private readonly options: ChatOptions) {
    this.sessionId = options.sessionId
    this.guard = new AnswerGuard(options.answerGuardMs ?? (options.terminal ? DEFAULT_ANSWER_GUARD_MS : 0))
    this.lines = new LineQueue(
      createInterface({ input: options.input, output: options.output, terminal: options.terminal }), options.output,
      options.terminal, () => { this.interrupt() }
    )
    // In a terminal, a line typed while a turn runs steers it; piped input stays a queue of turns.
    if (options.terminal) this.lines.divert = (entry) => this.steer(entry)
    options.client.on((notice) => {
      if (this.finished) return
      if (notice.type === 'state' && notice.state === 'reconnecting') this.note(`… connection lost (${notice.closeCode ?? '?'}); reconnecting, attempt ${notice.attempt}`)
      if (notice.type === 'state' && notice.state === 'closed') this.note('! disconnected from the gateway')
      if (notice.type === 'subscribed' && notice.resumed) this.note(`… resumed after seq ${notice.afterSeq} (gateway at seq ${notice.serverLastSeq})`)
      if (notice.type === 'error') this.note(`! ${notice.error.code}: ${notice.error.message}`)
    })
    this.done = this.run().finally(() => {
      this.finished = true
      this.lines.close()
    })
  }

  interrupt (): void {
    const turnId = this.running
    if (turnId === null) {
      this.stopping = true
      this.lines.close()
      return
    }
    this.note('… cancelling the turn (Ctrl-C again to quit)')
    this.running = null
    this.options.client.cancel(turnId).catch((err: unknown) => { this.note(`! cancel failed: ${describe(err)}`) })
  }

  /**
   * A line typed while a turn runs and no question is asked: sent to the turn as a steering
   * message (it joins the history before the next model call). Commands, empty lines and
   * answer-shaped lines (y, n, always…: typed ahead of a question, the stray-key guard judges
   * them there) wait for the prompt; the guard also holds back a line just after a withdrawal.
   */
  private steer (entry: Entry): boolean {
    const turnId = this.running
    const message = entry.text.trim()
    if (turnId === null || this.asking || message === '' || message.startsWith('/') || parseDecision(message) !== null) return false
    if (!this.admit(entry.text, entry.at, { kind: 'message' })) return true
    this.options.client.steer(turnId, message).catch((err: unknown) => { this.line(`! not sent to the running turn: ${describe(err)}`) })
    return true
  }

  private write (text: string): void {
    if (text === '') return
    this.options.output.write(text)
    this.midLine = !text.endsWith('\n')
  }

  private line (text: string): void {
    if (this.midLine || this.lines.prompting) this.write('\n')
    this.write(`${text}\n`)
  }

  private note (text: string): void {
    this.line(text)
  }

  private async run (): Promise<number> {
    try {
      await withTimeout(this.options.client.connect(), this.options.connectTimeoutMs ?? 5000)
    } catch (err) {
      this.line(`! cannot reach the gateway at ${this.options.client.url}: ${describe(err)}`)
      return 1
    }
    if (this.options.message !== undefined) {
      const outcome = await this.turn(this.options.message)
      return outcome === 'completed' ? 0 : 1
    }
    this.line(`connected to ${this.options.client.url}. Type a message (while a turn runs, a line steers it); /new starts a new session, /quit or Ctrl-D ends.`)
    for (;;) {
      const input = await this.lines.next('you> ', undefined, (text, at) => this.admit(text, at, { kind: 'message' }))
      if (input === null || this.stopping) return 0
      const message = input.trim()
      if (message === '') continue
      if (message === '/quit' || message === '/exit') return 0
      if (message === '/new') {
        this.sessionId = undefined
        this.line('… new session')
        continue
      }
      await this.turn(message)
    }
  }

  private async turn (message: string): Promise<string> {
    let stream
    try {
      stream = await this.options.client.startTurn({
        message,
        ...(this.sessionId === undefined ? {} : { session_id: this.sessionId }),
        ...(this.options.agent === undefined ? {} : { agent: this.options.agent }),
        ...(this.options.detach === true ? { detach: true } : {})
      })
    } catch (err) {
      this.line(`! could not start the turn: ${describe(err)}`)
      return 'failed'
    }
    this.sessionId = stream.sessionId ?? this.sessionId
    this.running = stream.turnId
    let outcome = 'failed'
    try {
      for await (const envelope of stream) outcome = await this.show(envelope, stream) ?? outcome
    } catch (err) {
      this.line(`! lost the turn: ${describe(err)}`)
    } finally {
      this.running = null
    }
    return outcome
  }

  /** Renders one event; answers approvals; returns the turn's outcome on its terminal event. */
  private async show (envelope: EventEnvelope, stream: TurnStream): Promise<string | undefined> {
    const e = envelope.event
    switch (e.kind) {
      case 'turn.started':
        this.line(`── turn ${envelope.turn_id} (agent ${oneLine(e.agent)}, session ${oneLine(e.session_id)})`)
        return undefined
      case 'iteration':
        this.narration = ''
        this.thinking = false
        return undefined
      case 'model.fallback':
        this.line(`  ↪ ${oneLine(e.from)} failed (${oneLine(e.code)}); trying ${oneLine(e.to)}`)
        return undefined
      case 'reasoning.delta':
        if (!this.thinking) this.line('  ⋯ thinking')
        this.thinking = true
        return undefined
      case 'user.message':
        this.line(`» ${clip(oneLine(terminalSafe(e.message)), MAX_ARGS_CHARS)} (joins before the next model call)`)
        return undefined
      case 'turn.resumed':
        // A model call the restart cut off is made again: its narration starts over.
        this.line('↻ resumed after a gateway restart')
        this.narration = ''
        return undefined
      case 'text.delta': {
        this.thinking = false
        const text = terminalSafe(e.text)
        this.narration += text
        this.write(text)
        return undefined
      }
      case 'approval.requested':
        await this.askApproval(e, envelope.seq, stream)
        return undefined
      case 'approval.resolved':
        this.line(`  → ${e.decision} (${oneLine(e.decided_by)})`)
        return undefined
      case 'tool_call':
        this.line(`▶ ${oneLine(e.name)} ${clip(terminalSafe(JSON.stringify(modelArguments(e.name, e.arguments))), MAX_ARGS_CHARS)}`)
        return undefined
      case 'tool.progress':
        this.line(`  ⋯ ${progressText(e)}`)
        return undefined
      case 'tool_result':
        this.toolResult(e)
        return undefined
      case 'turn.completed':
        if (this.narration.trim() !== terminalSafe(e.final_text).trim()) this.line(terminalSafe(e.final_text))
        this.line('✓ completed')
        return 'completed'
      case 'turn.cancelled':
        this.line(`✗ cancelled: ${terminalSafe(e.reason)}`)
        return 'cancelled'
      case 'turn.failed':
        this.line(`✗ failed (${terminalSafe(e.code)}): ${terminalSafe(e.message)}`)
        return 'failed'
      default: {
        // A new event kind fails to compile here until the terminal client shows it.
        const unshown: never = e
        return unshown
      }
    }
  }

  private toolResult (e: TurnEventOf<'tool_result'>): void {
    this.line(`■ ${oneLine(e.name)} ${e.status} (${e.duration_ms} ms)${e.truncated === true ? ' [truncated]' : ''}`)
    const text = terminalSafe(resultText(e.output, e.error)).replace(/\n+$/, '')
    if (text === '') return
    const lines = text.split('\n')
    for (const l of lines.slice(0, MAX_OUTPUT_LINES)) this.line(`  │ ${l}`)
    if (lines.length > MAX_OUTPUT_LINES) this.line(`  │ … ${lines.length - MAX_OUTPUT_LINES} more lines`)
  }

  /** Applies the stray-key guard to one entered line; prints why when it swallows it. */
  private admit (text: string, at: number, target: LineTarget): boolean {
    const refusal = this.guard.check(text, at, target)
    if (refusal === null) return true
    this.midLine = false
    this.line(`  ${terminalSafe(refusal).replace(/\n/g, '↵')}`)
    return false
  }

  /**
   * Asks at the prompt until answered, unless the request is settled first elsewhere (another
   * client answered, it expired, the turn was cancelled): then the question is withdrawn, with
   * the reason, and the stray-key guard (client/answer-guard.ts) keeps a late key from counting.
   */
  private async askApproval (e: TurnEventOf<'approval.requested'>, seq: number, stream: TurnStream): Promise<void> {
    this.asking = true
    try {
      await this.askApprovalNow(e, seq, stream)
    } finally {
      this.asking = false
    }
  }

  private async askApprovalNow (e: TurnEventOf<'approval.requested'>, seq: number, stream: TurnStream): Promise<void> {
    const tool = oneLine(e.name)
    this.line(`? ${tool} needs approval; it runs with exactly these arguments:`)
    const columns = this.options.terminal ? (this.options.output as { columns?: number }).columns : undefined
    for (const line of exactArgumentLines(e.display, columns)) this.line(line)
    for (const line of promptFacts(e)) this.line(line)
    const settled = new AbortController()
    void this.watchSettlement(stream, seq, e.request_id, settled)
    this.guard.questionShown()
    const shownAt = Date.now()
    const target: LineTarget = { kind: 'answer', shownAt }
    // `always` on shell allows the exact command for the session, not the tool.
    const always = e.name === 'shell' ? '[a]lways (this exact command)' : '[a]lways'
    let decision: OperatorDecision | null = null
    while (decision === null) {
      const answer = await this.askLine(`  allow? [y]es / [n]o / ${always} / [e]dit: `, settled.signal, tool, target)
      if (answer.kind === 'settled') return
      if (answer.kind === 'closed') {
        decision = 'no'
        break
      }
      decision = parseDecision(answer.text)
      if (decision === null) this.line('  please answer y, n, a or e')
    }
    let replacement: string | undefined
    if (decision === 'edit') {
      const text = await this.askLine('  replacement result: ', settled.signal, tool, null)
      if (text.kind === 'settled') return
      if (text.kind === 'closed') decision = 'no'
      else replacement = text.text
    }
    settled.abort()
    try {
      await this.options.client.respond(e.request_id, decision, replacement)
    } catch (err) {
      this.line(`! the answer was not taken: ${describe(err)}`)
    }
  }

  /** One line of an approval question; says so when it was withdrawn or input ended. */
  private async askLine (
    prompt: string, settled: AbortSignal, tool: string, target: LineTarget | null
  ): Promise<{ kind: 'settled' } | { kind: 'closed' } | { kind: 'line', text: string }> {
    const text = await this.lines.next(prompt, settled, target === null ? undefined : (line, at) => this.admit(line, at, target))
    this.midLine = false
    if (settled.aborted) {
      const why = settled.reason as Withdrawal
      const discarded = this.lines.discardPartial()
      this.guard.withdraw(tool, why, Date.now())
      const dropped = discarded === '' ? '' : `; discarded the half-typed ${JSON.stringify(terminalSafe(discarded))}`
      this.line(`  (withdrawn: ${withdrawalText(why)}; not asking any more${dropped})`)
      return { kind: 'settled' }
    }
    if (text === null) {
      this.line('  (input closed: answering no)')
      return { kind: 'closed' }
    }
    return { kind: 'line', text }
  }

  /** Aborts `settled` with the reason the question left the prompt, unless this client answered first. */
  private async watchSettlement (stream: TurnStream, afterSeq: number, requestId: string, settled: AbortController): Promise<void> {
    try {
      for await (const envelope of stream.from(afterSeq)) {
        if (settled.signal.aborted) return
        const why = withdrawalBy(envelope.event, requestId)
        if (why !== null) {
          settled.abort(why)
          return
        }
      }
    } catch {
      if (!settled.signal.aborted) settled.abort({ kind: 'lost' } satisfies Withdrawal)
    }
  }
}

/** Why the question is asked, its risk, when it expires, and what `always` grants (for shell: this command only). */
function promptFacts (e: TurnEventOf<'approval.requested'>): string[] {
  const reason = oneLine(e.reason)
  const risk = e.risk
  const expiry = timeLeft(e.expires_at, Date.now()).text
  const grant = e.name === 'shell'
    ? 'always = run it, and run exactly this command again without asking for the rest of the session'
    : `always = run it, and run every ${oneLine(e.name)} call without asking for the rest of the session`
  return [`  why: ${reason} · risk: ${risk} · ${expiry}`, `  ${grant}`]
}

/** Whether `event` takes the question `requestId` off the prompt, and why. */
function withdrawalBy (event: EventEnvelope['event'], requestId: string): Withdrawal | null {
  switch (event.kind) {
    case 'approval.resolved':
      if (event.request_id !== requestId) return null
      if (event.decision === 'expired') return { kind: 'expired' }
      if (event.decision === 'cancelled') return { kind: 'turn-cancelled' }
      if (event.decision === 'auto-deny') return { kind: 'auto-denied' }
      return { kind: 'answered', decision: event.decision, by: oneLine(event.decided_by) }
    case 'turn.cancelled': return { kind: 'turn-cancelled' }
    case 'turn.completed': return { kind: 'turn-ended', outcome: 'completed' }
    case 'turn.failed': return { kind: 'turn-ended', outcome: 'failed' }
    default: return null
  }
}

async function withTimeout<T> (promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => { reject(new TollgateClientError('TIMEOUT', `not connected after ${ms} ms`)) }, ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

function describe (err: unknown): string {
  return err instanceof TollgateClientError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err)
}

export function startChat (options: ChatOptions): Chat {
  return new ChatSession(options)
}
