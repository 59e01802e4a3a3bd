/**
 * The terminal client's conversation loop: read a message, start a turn, stream its text and
 * tool cards, and ask the person at the keyboard about each approval (yes / no / always / edit).
 * Every model or tool string is stripped of control characters before it reaches the terminal,
 * so neither can move the cursor, recolour or retitle it, or hide text with bidi overrides.
 */
import { createInterface, type Interface } from 'node:readline'
import {
  isTerminal, resultText, TollgateClientError,
  type EventEnvelope, type OperatorDecision, type TollgateClient, type TurnEventOf, type TurnStream
} from '@tollgate/client'

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
}

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

function clip (text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more chars)`
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

/** Lines of input in arrival order; piped input may arrive long before it is asked for. */
class LineQueue {
  private readonly lines: string[] = []
  private waiter: ((line: string | null) => void) | null = null
  private ended = false
  /** A TTY prompt is on screen waiting for input: other output must start on a fresh line. */
  prompting = false

  constructor (
    private readonly rl: Interface, private readonly output: NodeJS.WritableStream, private readonly terminal: boolean,
    onInterrupt: () => void
  ) {
    // In a TTY readline takes Ctrl-C itself instead of the process getting SIGINT.
    rl.on('SIGINT', onInterrupt)
    rl.on('line', (line) => {
      const waiter = this.waiter
      this.waiter = null
      if (waiter !== null) waiter(line)
      else this.lines.push(line)
    })
    rl.on('close', () => {
      this.ended = true
      const waiter = this.waiter
      this.waiter = null
      waiter?.(null)
    })
  }

  /** The next line, or null once input has ended or `signal` aborted the question. */
  async next (prompt: string, signal?: AbortSignal): Promise<string | null> {
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
    this.output.write(line === null ? '\n' : `${line}\n`)
    return line
  }

  private async wait (signal: AbortSignal | undefined): Promise<string | null> {
    if (signal?.aborted === true) return null
    return await new Promise((resolve) => {
      const abandon = (): void => {
        if (this.waiter !== waiter) return
        this.waiter = null
        resolve(null)
      }
      const waiter = (line: string | null): void => {
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
  private sessionId: string | undefined
  private running: string | null = null
  private midLine = false
  private narration = ''
  private stopping = false
  private finished = false

  constructor (private readonly options: ChatOptions) {
    this.sessionId = options.sessionId
    this.lines = new LineQueue(
      createInterface({ input: options.input, output: options.output, terminal: options.terminal }), options.output,
      options.terminal, () => { this.interrupt() }
    )
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
    this.line(`connected to ${this.options.client.url}. Type a message; /new starts a new session, /quit or Ctrl-D ends.`)
    for (;;) {
      const input = await this.lines.next('you> ')
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
        return undefined
      case 'text.delta': {
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
        this.line(`▶ ${oneLine(e.name)} ${clip(terminalSafe(JSON.stringify(e.arguments)), MAX_ARGS_CHARS)}`)
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

  /**
   * Asks at the prompt until answered, unless the request is settled first elsewhere (another
   * client answered, it expired, the turn was cancelled): then the question is withdrawn.
   */
  private async askApproval (e: TurnEventOf<'approval.requested'>, seq: number, stream: TurnStream): Promise<void> {
    this.line(`? ${oneLine(e.name)} needs approval; it runs with exactly these arguments:`)
    const columns = this.options.terminal ? (this.options.output as { columns?: number }).columns : undefined
    for (const line of exactArgumentLines(e.display, columns)) this.line(line)
    const settled = new AbortController()
    void this.watchSettlement(stream, seq, e.request_id, settled)
    // `always` on shell allows the exact command for the session, not the tool.
    const always = e.name === 'shell' ? '[a]lways (this exact command)' : '[a]lways'
    let decision: OperatorDecision | null = null
    while (decision === null) {
      const answer = await this.askLine(`  allow? [y]es / [n]o / ${always} / [e]dit: `, settled.signal)
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
      const text = await this.askLine('  replacement result: ', settled.signal)
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

  /** One line of an approval question; says so when it was settled elsewhere or input ended. */
  private async askLine (prompt: string, settled: AbortSignal): Promise<{ kind: 'settled' } | { kind: 'closed' } | { kind: 'line', text: string }> {
    const text = await this.lines.next(prompt, settled)
    this.midLine = false
    if (settled.aborted) {
      this.line('  (settled elsewhere; not asking any more)')
      return { kind: 'settled' }
    }
    if (text === null) {
      this.line('  (input closed: answering no)')
      return { kind: 'closed' }
    }
    return { kind: 'line', text }
  }

  private async watchSettlement (stream: TurnStream, afterSeq: number, requestId: string, settled: AbortController): Promise<void> {
    try {
      for await (const envelope of stream.from(afterSeq)) {
        if (settled.signal.aborted) return
        const e = envelope.event
        if ((e.kind === 'approval.resolved' && e.request_id === requestId) || isTerminal(envelope)) {
          settled.abort()
          return
        }
      }
    } catch {
      settled.abort()
    }
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
