/**
 * Parser section's reader: one implementation of reading a streamed model answer, in a process
 * of its own so its CPU time is its own. `run` reads `streams` answers from the wire server,
 * `concurrency` at a time, each down to the visible text, the reasoning and the tool call — the
 * three things the turn loop needs — and checks each against the expected answer, so a faster
 * reader that drops or mangles a piece counts as failed, not fast.
 *
 * The implementations (the choices of docs/decisions/0220):
 * - `tollgate`: the gateway's own provider (src/providers), built by createProviders() from config
 *   as `npm start` builds it, called through its `chat()` with live text and reasoning callbacks;
 * - `ai-sdk`: the AI SDK provider package's LanguageModel `doStream` (not streamText), its parts read;
 * - `official`: the provider's official client with its streaming helper, which accumulates the
 *   answer (`messages.stream`, `responses.stream`, `chat.completions.stream`), events read as they come.
 */
import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { isDeepStrictEqual } from 'node:util'
import { loadConfig } from '../src/core/config.js'
import { createProviders } from '../src/providers/index.js'
import type { ModelProvider } from '../src/providers/types.js'
import type { ToolSpec } from '../src/tools/contract.js'
import { announceReady, childOptions, serveCommands, type Message } from './ipc.js'
import { expectedAnswer, type ExpectedAnswer, type WireApi, type WireShape } from './provider-wire.js'

export type ParserImpl = 'tollgate' | 'ai-sdk' | 'official'

interface Options { api: WireApi, impl: ParserImpl, baseUrl: string, shape: WireShape }

/** What one reader made of one answer. */
interface Read { text: string, reasoning: string, toolName: string, toolArguments: unknown, deltas: number }

type Reader = () => Promise<Read>

const SYSTEM = 'You are a benchmark.'
const USER = 'Look it up.'
const TOOL: ToolSpec = {
  name: 'lookup',
  description: 'Looks something up.',
  parameters: {
    type: 'object',
    properties: { query: { type: 'string' }, limit: { type: 'integer' }, exact: { type: 'boolean' } },
    required: ['query'],
    additionalProperties: false
  }
}
const MODEL = 'bench-model'

function tollgateReader (api: WireApi, baseUrl: string): Reader {
  const kind = api === 'chat' ? 'openai' : api === 'responses' ? 'openai-responses' : 'anthropic'
  const config = loadConfig({
    env: {},
    overrides: {
      providers: { bench: { kind, base_url: `${baseUrl}/v1`, api_key_env: 'BENCH_KEY', stream: true, native_tools: true, max_retries: 0 } }
    }
  })
  const provider = createProviders(config, { BENCH_KEY: 'bench' }).get('bench') as ModelProvider
  return async () => {
    let text = ''
    let reasoning = ''
    let deltas = 0
    const answer = await provider.chat(
      { model: MODEL, messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: USER }], tools: [TOOL] },
      {
        signal: new AbortController().signal,
        onTextDelta: (t) => { text += t; deltas++ },
        onReasoningDelta: (t) => { reasoning += t; deltas++ }
      }
    )
    const call = answer.toolCalls[0]
    return { text, reasoning, toolName: call?.name ?? '', toolArguments: call === undefined ? undefined : JSON.parse(call.arguments), deltas }
  }
}

function aiSdkModel (api: WireApi, baseUrl: string): LanguageModelV3 {
  switch (api) {
    case 'anthropic': return createAnthropic({ baseURL: `${baseUrl}/v1`, apiKey: 'bench' })(MODEL)
    case 'responses': return createOpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'bench' }).responses(MODEL)
    case 'chat': return createOpenAICompatible({ name: 'bench', baseURL: `${baseUrl}/v1`, apiKey: 'bench' }).chatModel(MODEL)
  }
}

function aiSdkReader (api: WireApi, baseUrl: string): Reader {
  const model = aiSdkModel(api, baseUrl)
  const call: LanguageModelV3CallOptions = {
    prompt: [{ role: 'system', content: SYSTEM }, { role: 'user', content: [{ type: 'text', text: USER }] }],
    tools: [{ type: 'function', name: TOOL.name, description: TOOL.description, inputSchema: TOOL.parameters as never }],
    maxOutputTokens: 4096
  }
  return async () => {
    const { stream } = await model.doStream(call)
    let text = ''
    let reasoning = ''
    let deltas = 0
    let toolName = ''
    let toolArguments: unknown
    const reader = stream.getReader()
    for (let next = await reader.read(); next.done !== true; next = await reader.read()) {
      const part = next.value
      if (part.type === 'text-delta') { text += part.delta; deltas++ } else if (part.type === 'reasoning-delta') { reasoning += part.delta; deltas++ } else if (part.type === 'tool-call') {
        toolName = part.toolName
        toolArguments = JSON.parse(part.input)
      } else if (part.type === 'error') throw part.error instanceof Error ? part.error : new Error(String(part.error))
    }
    return { text, reasoning, toolName, toolArguments, deltas }
  }
}

function officialReader (api: WireApi, baseUrl: string): Reader {
  if (api === 'anthropic') {
    const client = new Anthropic({ baseURL: baseUrl, apiKey: 'bench', maxRetries: 0 })
    return async () => {
      let text = ''
      let reasoning = ''
      let deltas = 0
      const stream = client.messages.stream({
        model: MODEL,
        max_tokens: 4096,
        system: SYSTEM,
        messages: [{ role: 'user', content: USER }],
        tools: [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.parameters as Anthropic.Tool.InputSchema }]
      })
      for await (const event of stream) {
        if (event.type !== 'content_block_delta') continue
        if (event.delta.type === 'text_delta') { text += event.delta.text; deltas++ } else if (event.delta.type === 'thinking_delta') { reasoning += event.delta.thinking; deltas++ }
      }
      const message = await stream.finalMessage()
      const use = message.content.find((b) => b.type === 'tool_use')
      return { text, reasoning, toolName: use?.name ?? '', toolArguments: use?.input, deltas }
    }
  }
  const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'bench', maxRetries: 0 })
  if (api === 'responses') {
    return async () => {
      let text = ''
      let reasoning = ''
      let deltas = 0
      const stream = client.responses.stream({
        model: MODEL,
        instructions: SYSTEM,
        input: USER,
        tools: [{ type: 'function', name: TOOL.name, description: TOOL.description, parameters: TOOL.parameters, strict: false }]
      })
      for await (const event of stream) {
        if (event.type === 'response.output_text.delta') { text += event.delta; deltas++ } else if (event.type === 'response.reasoning_summary_text.delta') { reasoning += event.delta; deltas++ }
      }
      const response = await stream.finalResponse()
      const fc = response.output.find((o) => o.type === 'function_call')
      return { text, reasoning, toolName: fc?.name ?? '', toolArguments: fc === undefined ? undefined : JSON.parse(fc.arguments), deltas }
    }
  }
  return async () => {
    let text = ''
    let reasoning = ''
    let deltas = 0
    const stream = client.chat.completions.stream({
      model: MODEL,
      messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: USER }],
      tools: [{ type: 'function', function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.parameters } }]
    })
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string | null, reasoning_content?: string } | undefined
      if (typeof delta?.content === 'string' && delta.content !== '') { text += delta.content; deltas++ }
      if (typeof delta?.reasoning_content === 'string') { reasoning += delta.reasoning_content; deltas++ }
    }
    const completion = await stream.finalChatCompletion()
    const call = completion.choices[0]?.message.tool_calls?.[0]
    const fn = call !== undefined && call.type === 'function' ? call.function : undefined
    return { text, reasoning, toolName: fn?.name ?? '', toolArguments: fn === undefined ? undefined : JSON.parse(fn.arguments), deltas }
  }
}

function readerFor (options: Options): Reader {
  switch (options.impl) {
    case 'tollgate': return tollgateReader(options.api, options.baseUrl)
    case 'ai-sdk': return aiSdkReader(options.api, options.baseUrl)
    case 'official': return officialReader(options.api, options.baseUrl)
  }
}

function mismatch (read: Read, expected: ExpectedAnswer): string | null {
  if (read.text !== expected.text) return `text differs (${read.text.length} of ${expected.text.length} characters)`
  if (read.reasoning !== expected.reasoning) return `reasoning differs (${read.reasoning.length} of ${expected.reasoning.length} characters)`
  if (read.toolName !== expected.toolName || !isDeepStrictEqual(read.toolArguments, expected.toolArguments)) return 'tool call differs'
  return null
}

async function run (read: Reader, expected: ExpectedAnswer, message: Message): Promise<Record<string, unknown>> {
  const streams = Number(message.streams)
  const concurrency = Number(message.concurrency)
  let started = 0
  let deltas = 0
  let errors = 0
  let firstError: string | null = null
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  const worker = async (): Promise<void> => {
    while (started < streams) {
      started++
      try {
        const out = await read()
        const wrong = mismatch(out, expected)
        if (wrong !== null) throw new Error(wrong)
        deltas += out.deltas
      } catch (err) {
        errors++
        firstError ??= err instanceof Error ? err.message : String(err)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, streams) }, worker))
  const cpu = process.cpuUsage(cpu0)
  return { deltas, errors, firstError, cpuMs: (cpu.user + cpu.system) / 1000, seconds: Number(process.hrtime.bigint() - t0) / 1e9 }
}

function main (): void {
  const options = childOptions<Options>()
  const read = readerFor(options)
  const expected = expectedAnswer(options.shape)
  serveCommands({ run: async (message) => await run(read, expected, message) })
  announceReady({})
}

main()
