/**
 * The least a program can do for one turn of the workload, shared by both bare baselines (the
 * loop without HTTP and the bare Fastify route): the same provider calls with undici, the no-op
 * tools called directly; no events, no validation, no persistence.
 */
import { Agent, request } from 'undici'
import { FINAL_TEXT, MAX_STEPS, MODEL, NOOP_TOOLS, SYSTEM_PROMPT } from './workload.js'

interface Call { id: string, name: string, arguments: string }
interface Completion { text: string, calls: Call[] }
type Message = Record<string, unknown>

export interface BareTurnResult {
  finalText: string
  toolCalls: Array<{ name: string, arguments: unknown }>
}

export interface BareTurns {
  run (message: string): Promise<BareTurnResult>
  /** Tool executions so far. */
  readonly toolRuns: number
  close (): Promise<void>
}

const tools = NOOP_TOOLS.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }))
const byName = new Map(NOOP_TOOLS.map((t) => [t.name, t]))

function parseJson (text: string): Completion {
  const body = JSON.parse(text) as {
    choices?: Array<{
      message?: {
        content?: string | null, tool_calls?: Array<{ id: string, function: { name: string, arguments: string } }>
      }
    }>
  }
  const message = body.choices?.[0]?.message
  return {
    text: message?.content ?? '',
    calls: (message?.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }))
  }
}

function parseSse (text: string): Completion {
  let content = ''
  const calls: Call[] = []
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue
    const chunk = JSON.parse(line.slice(6)) as {
      choices?: Array<{
        delta?: {
          content?: string,
          tool_calls?: Array<{ index: number, id?: string, function?: { name?: string, arguments?: string } }>
        }
      }>
    }
    const delta = chunk.choices?.[0]?.delta
    if (delta === undefined) continue
    content += delta.content ?? ''
    for (const d of delta.tool_calls ?? []) {
      const call = calls[d.index] ?? (calls[d.index] = { id: '', name: '', arguments: '' })
      call.id = d.id ?? call.id
      call.name += d.function?.name ?? ''
      call.arguments += d.function?.arguments ?? ''
    }
  }
  return { text: content, calls }
}

export function createBareTurns (options: { providerUrl: string, stream: boolean }): BareTurns {
  const url = `${options.providerUrl}/chat/completions`
  const dispatcher = new Agent({ headersTimeout: 30_000, bodyTimeout: 30_000 })
  let toolRuns = 0

  const complete = async (messages: Message[]): Promise<Completion> => {
    const payload: Record<string, unknown> = { model: MODEL, messages, stream: options.stream, tools }
    if (options.stream) payload.stream_options = { include_usage: true }
    const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload), dispatcher })
    const text = await res.body.text()
    if (res.statusCode !== 200) throw new Error(`provider answered ${res.statusCode}`)
    return options.stream ? parseSse(text) : parseJson(text)
  }

  return {
    async run (message) {
      const messages: Message[] = [{ role: 'system', content: SYSTEM_PROMPT }, { role: 'user', content: message }]
      const toolCalls: BareTurnResult['toolCalls'] = []
      for (let step = 0; step < MAX_STEPS; step++) {
        const reply = await complete(messages)
        if (reply.calls.length === 0) {
          if (reply.text !== FINAL_TEXT) throw new Error(`unexpected final text ${JSON.stringify(reply.text)}`)
          return { finalText: reply.text, toolCalls }
        }
        messages.push({ role: 'assistant', content: reply.text === '' ? null : reply.text, tool_calls: reply.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) })
        for (const call of reply.calls) {
          const tool = byName.get(call.name)
          if (tool === undefined) throw new Error(`unknown tool ${call.name}`)
          const args = JSON.parse(call.arguments) as { n: number }
          toolRuns++
          toolCalls.push({ name: call.name, arguments: args })
          messages.push({ role: 'tool', tool_call_id: call.id, content: tool.run(args) })
        }
      }
      throw new Error('no final answer within the step limit')
    },
    get toolRuns () {
      return toolRuns
    },
    async close () {
      await dispatcher.close()
    }
  }
}
