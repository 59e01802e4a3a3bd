/**
 * The embedded DEMO provider: a deterministic script, not a language model. It exists so that
 * `npm start` shows the whole lifecycle (streamed text, tool calls, an approval prompt, results)
 * with no API key and no network. Every answer it writes says so.
 */
import type { ChatCallOptions, ChatMessage, ChatRequest, ChatResponse, ChatToolCall, ModelProvider } from './types.js'

const NOTE_PATH = 'notes/demo.txt'

function lastUserIndex (messages: readonly ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]?.role === 'user') return i
  return -1
}

function toolOutputs (messages: readonly ChatMessage[], from: number): string[] {
  return messages.slice(from).filter((m) => m.role === 'tool').map((m) => m.content ?? '')
}

function sleep (ms: number, signal: AbortSignal): Promise<void> {
  if (ms === 0) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'))
    }, { once: true })
  })
}

export class DemoProvider implements ModelProvider {
  readonly name: string
  readonly kind = 'demo'
  readonly nativeTools = true
  private readonly stepDelayMs: number
  private calls = 0

  constructor (options: { name: string, stepDelayMs: number }) {
    this.name = options.name
    this.stepDelayMs = options.stepDelayMs
  }

  async chat (req: ChatRequest, options: ChatCallOptions): Promise<ChatResponse> {
    const userAt = lastUserIndex(req.messages)
    const userText = req.messages[userAt]?.content ?? ''
    const round = req.messages.slice(userAt + 1).filter((m) => m.role === 'assistant').length
    const available = new Set((req.tools ?? []).map((t) => t.name))
    const plan = this.plan(round, userText, available, toolOutputs(req.messages, userAt + 1))
    for (const word of plan.text.split(/(?<= )/)) {
      if (options.signal.aborted) break
      options.onTextDelta?.(word)
      await sleep(this.stepDelayMs, options.signal)
    }
    if (options.signal.aborted) throw options.signal.reason instanceof Error ? options.signal.reason : new Error('aborted')
    return { text: plan.text, toolCalls: plan.calls, finishReason: plan.calls.length > 0 ? 'tool_calls' : 'stop' }
  }

  private call (name: string, args: Record<string, unknown>): ChatToolCall {
    this.calls += 1
    return { id: `demo_call_${this.calls}`, name, arguments: JSON.stringify(args) }
  }

  private plan (round: number, userText: string, tools: ReadonlySet<string>, outputs: string[]): { text: string, calls: ChatToolCall[] } {
    const prefix = '[demo provider — scripted, not an LLM] '
    if (round === 0 && tools.has('file_write')) {
      return {
        text: `${prefix}I will save your message to ${NOTE_PATH}. Writing files needs your approval. `,
        calls: [this.call('file_write', { path: NOTE_PATH, content: `${userText}\n` })]
      }
    }
    if (round <= 1 && tools.has('file_read') && tools.has('shell') && outputs.length <= 1) {
      return {
        text: 'Now I will read the note back (auto-approved) and list the notes folder with the shell (needs approval). ',
        calls: [this.call('file_read', { path: NOTE_PATH }), this.call('shell', { command: 'ls -l notes' })]
      }
    }
    const summary = outputs.length === 0
      ? 'No tools were available to me in this turn.'
      : `The tools answered:\n${outputs.map((o, i) => `${i + 1}. ${o.split('\n')[0] ?? ''}`).join('\n')}`
    return { text: `${prefix}Done. ${summary}`, calls: [] }
  }

  async close (): Promise<void> {}
}
